#!/usr/bin/env bash
# `make web`: (re)start only the demo's web server (gunicorn, as `make demo` started it) after a crash or a code
# change. Stops the old one's process group first, starts a new one with the settings `make demo` used
# (var/demo.env) and appends to var/web.log.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
bash scripts/stop.sh web
if [ -f var/demo.env ]; then set -a; . var/demo.env; set +a; fi
export RLMESH_WORKFLOW_EDITION=${RLMESH_WORKFLOW_EDITION:-2026.06} PORT=${PORT:-8000}
export RLMESH_ACCESS_LOG=${RLMESH_ACCESS_LOG:-var/web-access.log}
echo "== $(date -u +%FT%TZ) web server started by scripts/web.sh" >>var/web.log
# Workers and threads: rlmesh_site/gunicorn_conf.py (WEB_CONCURRENCY, RLMESH_WEB_THREADS).
setsid .venv/bin/gunicorn -c python:rlmesh_site.gunicorn_conf rlmesh_site.asgi >>var/web.log 2>&1 < /dev/null &
echo $! > var/web.pid
echo "web server started on http://127.0.0.1:$PORT (process group $(cat var/web.pid)); log: var/web.log"
