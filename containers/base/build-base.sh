#!/usr/bin/env bash
# Build localhost/rlmesh-base:0.1.0 with no registry: debootstrap a Debian rootfs, install the same rlmesh,
# gymnasium and numpy wheels the workers use (downloaded on the host, installed offline), import into podman.
# Usage: containers/base/build-base.sh   (TAG and CACHE override the defaults)
set -euo pipefail
cd "$(dirname "$0")/../.."
TAG=${TAG:-localhost/rlmesh-base:0.1.0}
CACHE=${CACHE:-var/containers}
PY=.venv/bin/python
if podman image exists "$TAG" && [ -z "${REBUILD:-}" ]; then echo "$TAG exists"; exit 0; fi
mkdir -p "$CACHE"
ROOT="$CACHE/rootfs"
if [ ! -x "$CACHE/debootstrap-done/python3" ]; then
  rm -rf "$ROOT" "$CACHE/debootstrap-done"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$ROOT" http://deb.debian.org/debian
  mkdir -p "$CACHE/debootstrap-done" && ln -sf /usr/bin/python3 "$CACHE/debootstrap-done/python3"
fi
rm -rf "$ROOT/wheels" && mkdir -p "$ROOT/wheels"
$PY -m pip download -q -d "$ROOT/wheels" --only-binary=:all: --implementation cp --python-version 3.11 \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  "rlmesh==0.1.0" "gymnasium==1.4.0" "numpy==2.4.6"
chroot "$ROOT" sh -c 'rm -rf /opt/venv && python3 -m venv /opt/venv && /opt/venv/bin/pip install -q --no-index --find-links /wheels rlmesh gymnasium numpy \
  && mkdir -p /app && (id app >/dev/null 2>&1 || useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin app)'
rm -rf "$ROOT/wheels" "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/* "$ROOT"/usr/share/doc "$ROOT"/usr/share/man "$ROOT"/usr/share/locale
tar --numeric-owner -C "$ROOT" -c . | podman import \
  --change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV PYTHONUNBUFFERED=1' --change 'ENV LANG=C.UTF-8' --change 'ENV RLMESH_WORKFLOW_EDITION=2026.06' \
  --change 'WORKDIR /app' --change 'LABEL org.opencontainers.image.title=rlmesh-base' \
  --change 'LABEL rlmesh.version=0.1.0' --change 'CMD ["python3"]' - "$TAG"
echo "built $TAG"
