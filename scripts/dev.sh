#!/usr/bin/env bash
# `make dev`: for working on the code. Django's runserver (DEBUG on, reloads on every change, static files
# straight from the source folders) in the foreground, one Celery worker in the background; Ctrl-C stops both.
# `make demo` is the deployed way to serve (gunicorn, DEBUG off); both use var/ and `make stop`.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8000}
PY=.venv/bin/python
export RLMESH_WORKFLOW_EDITION=2026.06 PORT DEBUG=${DEBUG:-True}
mkdir -p var

bash scripts/stop.sh >/dev/null
$PY manage.py migrate -v0
$PY manage.py seed_demo >/dev/null
setsid .venv/bin/celery -A rlmesh_site worker -B -Q shards,maintenance -l info \
  --schedule var/celerybeat-schedule >var/worker.log 2>&1 < /dev/null &
echo $! > var/worker.pid
trap 'bash scripts/stop.sh' EXIT
echo "Sign in at http://127.0.0.1:${PORT}/accounts/login/ as demo / demo-password (worker log: var/worker.log)"
$PY manage.py runserver "127.0.0.1:${PORT}"
