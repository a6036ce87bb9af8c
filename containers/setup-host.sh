#!/usr/bin/env bash
# Install and configure podman (runc), debootstrap and the CNCF Distribution registry on a Debian 12 host,
# as spec/CONTAINERS.md measured. Idempotent; run as root (CI, or once on a worker host).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# The installs of `make test` run side by side (Makefile): apt calls take turns on one lock, and wait for any other
# apt (unattended upgrades on a fresh machine) instead of failing on its lock.
APT=(flock /tmp/rlmesh-apt.lock apt-get -o DPkg::Lock::Timeout=600)
pkgs=(podman runc debootstrap docker-registry uidmap slirp4netns netavark aardvark-dns conmon iptables openssl)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  "${APT[@]}" update -q
  "${APT[@]}" install -y -q --no-install-recommends "${missing[@]}"
fi
mkdir -p /etc/containers/registries.conf.d
# crun cannot run on this kernel's hybrid cgroups, and podman's default ulimits exceed the sandbox's.
cat > /etc/containers/containers.conf <<'CONF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
CONF
# The platform's registry listens on plain HTTP on loopback only.
cat > /etc/containers/registries.conf.d/50-rlmesh-local-registry.conf <<CONF
[[registry]]
location = "127.0.0.1:${RLMESH_REGISTRY_PORT:-5000}"
insecure = true
CONF
touch /etc/containers/nodocker
bash "$(dirname "$0")/sandbox-network.sh"
