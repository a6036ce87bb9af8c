#!/usr/bin/env bash
# The Debian packages `make demo` and `make test` need, installed when missing (as root; otherwise a clear message
# naming the command to run). Usage: scripts/setup-system.sh demo|test. Idempotent and quick when all is there.
#   demo: Chromium + ChromeDriver (one apt transaction, so their versions match) for the MiniWoB agent env.
#   test: also PostgreSQL and Redis (the scaled-out end-to-end tests start their own on private ports), Caddy
#         (deploy/Caddyfile in front of gunicorn), procps and curl; then the container host (podman, the registry).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-demo}
export DEBIAN_FRONTEND=noninteractive
# The installs of `make test` run side by side (Makefile): apt calls take turns on one lock, and wait for any other
# apt (unattended upgrades on a fresh machine) instead of failing on its lock.
APT=(flock /tmp/rlmesh-apt.lock apt-get -o DPkg::Lock::Timeout=600)

need=()
missing() { dpkg -s "$1" >/dev/null 2>&1 || need+=("$1"); }
command -v chromedriver >/dev/null || need+=(chromium chromium-driver)
if [ "$target" = test ]; then
  command -v pgrep >/dev/null || need+=(procps)
  command -v curl >/dev/null || need+=(curl)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  command -v redis-server >/dev/null || need+=(redis-server)
  command -v caddy >/dev/null || need+=(caddy)
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "make $target needs these Debian packages: ${need[*]}" >&2
    echo "install them as root:  sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  "${APT[@]}" update -q
  "${APT[@]}" install -y -q --no-install-recommends "${need[@]}"
fi
# Debian starts the packaged PostgreSQL and Redis services; the tests start their own and need neither.

if [ "$target" = test ]; then
  if [ "$(id -u)" = 0 ]; then
    bash containers/setup-host.sh  # podman + runc, the registry, debootstrap, the sandbox network (spec/CONTAINERS.md)
  elif ! command -v podman >/dev/null; then
    echo "make test's image tests need podman and the registry: sudo bash containers/setup-host.sh" >&2
    exit 1
  fi
fi
