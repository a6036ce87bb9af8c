#!/usr/bin/env bash
# `make worker`: (re)start only the demo's Celery worker (with its embedded beat) after a crash or a code change.
# Stops the old worker's whole process group first (beat and pool children included, so no orphaned beat keeps
# scheduling), starts a new one with the settings `make demo` used (var/demo.env) and appends to var/worker.log.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
bash scripts/stop.sh worker
if [ -f var/demo.env ]; then set -a; . var/demo.env; set +a; fi
export RLMESH_WORKFLOW_EDITION=${RLMESH_WORKFLOW_EDITION:-2026.06}
echo "== $(date -u +%FT%TZ) worker started by scripts/worker.sh" >>var/worker.log
setsid .venv/bin/celery -A rlmesh_site worker -B -Q shards,maintenance -l info \
  --schedule var/celerybeat-schedule >>var/worker.log 2>&1 < /dev/null &
echo $! > var/worker.pid
echo "worker started (process group $(cat var/worker.pid)); log: var/worker.log"
