#!/usr/bin/env bash
# Start the platform's OCI registry (token auth via the platform at $PUBLIC_URL) and Podman's Docker-compatible
# API service, in the background, with pid files under $RLMESH_VAR_DIR (default var/). Stop with stop-services.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
VAR=${RLMESH_VAR_DIR:-var}
mkdir -p "$VAR/registry"
.venv/bin/python manage.py registry_config "$VAR/registry/config.yml" >/dev/null
if ! { [ -f "$VAR/registry.pid" ] && kill -0 "$(cat "$VAR/registry.pid")" 2>/dev/null; }; then
  setsid docker-registry serve "$VAR/registry/config.yml" >"$VAR/registry.log" 2>&1 < /dev/null &
  echo $! > "$VAR/registry.pid"
fi
sock="$VAR/podman.sock"
if ! { [ -f "$VAR/podman.pid" ] && kill -0 "$(cat "$VAR/podman.pid")" 2>/dev/null; }; then
  rm -f "$sock"
  setsid podman system service --time=0 "unix://$(realpath "$VAR")/podman.sock" >"$VAR/podman.log" 2>&1 < /dev/null &
  echo $! > "$VAR/podman.pid"
fi
host=${RLMESH_REGISTRY_HOST:-127.0.0.1:5000}
for _ in $(seq 1 100); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://$host/v2/" || true)
  if [ -S "$sock" ] && [ "$code" = "401" ]; then break; fi
  sleep 0.2
done
echo "registry on ${RLMESH_REGISTRY_HOST:-127.0.0.1:5000}, Docker API on unix://$(realpath "$VAR")/podman.sock"
