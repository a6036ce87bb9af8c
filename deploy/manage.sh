#!/usr/bin/env bash
# manage.py with a deployment's settings loaded, e.g. `sudo -u rlmesh /opt/rlmesh/deploy/manage.sh migrate`.
# Reads /etc/rlmesh/rlmesh.env (the file every systemd unit in deploy/ reads) or $RLMESH_ENV_FILE.
set -euo pipefail
env_file=${RLMESH_ENV_FILE:-/etc/rlmesh/rlmesh.env}
cd "$(dirname "$0")/.."
[ -r "$env_file" ] || { echo "cannot read $env_file (run as a member of its group, e.g. sudo -u rlmesh)" >&2; exit 1; }
set -a
# shellcheck disable=SC1090  # KEY=value lines, as systemd's EnvironmentFile= reads them
. "$env_file"
set +a
exec .venv/bin/python manage.py "$@"
