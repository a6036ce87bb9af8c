#!/usr/bin/env bash
# `make demo`: migrate, seed a demo org/user/key, start the web server the way it is deployed (gunicorn,
# DEBUG off, static files collected and served by WhiteNoise) and one Celery worker in the background,
# submit examples/cartpole.json with the official rlmesh CLI, and print where to go next.
# Secrets are generated once into var/secrets.json by the first command and reused after.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8000}
PY=.venv/bin/python
export RLMESH_WORKFLOW_EDITION=2026.06 PORT
export DEBUG=${DEBUG:-False} RLMESH_STATIC_MANIFEST=${RLMESH_STATIC_MANIFEST:-True}
export RLMESH_ACCESS_LOG=${RLMESH_ACCESS_LOG:-var/web-access.log}
mkdir -p var

bash scripts/stop.sh >/dev/null

# --- agent evaluations (the /agents API): the demo's reference agent listens on loopback, which agent endpoints and
# webhook targets may use only when the operator allows private targets. Set before the web server and worker start.
export RLMESH_AGENT_ALLOW_PRIVATE_TARGETS=true
echo "Agent endpoints and webhooks on loopback/private addresses are ALLOWED in this demo (RLMESH_AGENT_ALLOW_PRIVATE_TARGETS=true)."
# --- end agent evaluations
$PY manage.py migrate -v0
$PY manage.py collectstatic --noinput -v0
seed=$($PY manage.py seed_demo)
api_key=$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["apiKey"])' "$seed")
url="http://127.0.0.1:${PORT}"

# The web server and the worker: scripts/web.sh and scripts/worker.sh (also `make web` and `make worker`, to
# restart one alone) with the settings written here. Both append to their logs (var/web.log, var/worker.log).
printf 'DEBUG=%s\nRLMESH_STATIC_MANIFEST=%s\nRLMESH_AGENT_ALLOW_PRIVATE_TARGETS=%s\nPORT=%s\nRLMESH_ACCESS_LOG=%s\n' \
  "$DEBUG" "$RLMESH_STATIC_MANIFEST" "$RLMESH_AGENT_ALLOW_PRIVATE_TARGETS" "$PORT" "$RLMESH_ACCESS_LOG" >var/demo.env
# Any other setting given to `make demo` (RLMESH_MODEL_BATCH=4 make demo) is kept too, so `make web` and
# `make worker` restart with it rather than silently without it (docs/running/settings.md).
while IFS='=' read -r name _; do
  case "$name" in DEBUG|RLMESH_STATIC_MANIFEST|RLMESH_AGENT_ALLOW_PRIVATE_TARGETS|PORT|RLMESH_ACCESS_LOG) continue ;; esac
  printf '%s=%q\n' "$name" "${!name}" >>var/demo.env
done < <(env | grep -E '^(RLMESH_[A-Z0-9_]+|DATABASE_URL|CELERY_BROKER_URL)=' || true)
bash scripts/web.sh >/dev/null
bash scripts/worker.sh >/dev/null

for _ in $(seq 1 100); do
  curl -fsS "$url/v1/info" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "$url/v1/info" >/dev/null || { echo "web server did not start; see var/web.log"; tail -20 var/web.log; exit 1; }
# Submit once the worker has announced itself (else the plan rightly warns that no worker is alive).
$PY manage.py shell -c "
import time
from evaluations.planning.plan import live_workers
deadline = time.monotonic() + 60
while not live_workers() and time.monotonic() < deadline:
    time.sleep(0.2)
" || true

export RLMESH_API_KEY="$api_key" RLMESH_PLATFORM_URL="$url"
echo "== Submitting examples/cartpole.json with the official rlmesh CLI"
out=$(.venv/bin/rlmesh eval submit examples/cartpole.json --wait) || { echo "$out"; echo "evaluation did not complete; see var/worker.log"; exit 1; }
echo "$out"
eval_id=$(echo "$out" | sed -n 's/.*Submitted \(eval_[0-9a-f]*\).*/\1/p' | head -1)
echo
echo "== Scores per task (95% Wilson interval)"
$PY scripts/print_scores.py "$eval_id"
echo
echo "Dashboard:  $url/evaluations/$eval_id"
echo "Sign in:    $url/accounts/login/  as demo / demo-password"
echo "API docs:   $url/v1/docs"
echo "Stop with:  make stop"
echo
# --- agent evaluations (the /agents API): start the reference agent on a free port and submit one run against it.
echo
echo "== Agent evaluation: the reference agent (an OpenAI-compatible endpoint) on MiniWoB through /agents"
setsid $PY manage.py serve_reference_agent --port 0 >var/reference-agent.log 2>&1 < /dev/null &
echo $! > var/reference-agent.pid
agent_url=""
for _ in $(seq 1 100); do
  agent_url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' var/reference-agent.log | head -1)
  [ -n "$agent_url" ] && break
  sleep 0.1
done
[ -n "$agent_url" ] || { echo "reference agent did not start; see var/reference-agent.log"; exit 1; }
echo "Reference agent: $agent_url (stopped by make stop)"
run=$(curl -fsS -X POST "$url/agents/evaluations/run" -H "Authorization: Bearer $api_key" \
  -H "Content-Type: application/json" --data @- <<JSON
{
  "env_id": "miniwob",
  "model": "reference-agent-v1",
  "task_ids": ["miniwob.click-test", "miniwob.login-user", "miniwob.enter-text.s0003"],
  "rollouts_per_example": 1,
  "webhook_url": null,
  "endpoint": {
    "url": "$agent_url",
    "key": null,
    "model": "reference",
    "use_wrapper": true,
    "send_tool_definitions": true,
    "use_openai_chat": true,
    "minimal_observation": null,
    "additional_params": null
  }
}
JSON
) || { echo "agent run was refused"; exit 1; }
echo "$run"
status_url=$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["status_url"])' "$run")
echo "Status:     $url/agents$status_url"
echo "  curl -s -H \"Authorization: Bearer $api_key\" \"$url/agents$status_url\" | python3 -m json.tool"
# --- the offline shop: two catalog tasks, then the seed's open run with a state check (both against the reference agent)
echo
echo "== Agent evaluation on the offline shop: two catalog tasks, and an open run (a free-text task) checked by a verifier"
endpoint="{\"url\": \"$agent_url\", \"model\": \"reference\"}"
shop=$(curl -fsS -X POST "$url/agents/evaluations/run" -H "Authorization: Bearer $api_key" \
  -H "Content-Type: application/json" \
  --data "{\"env_id\": \"shop\", \"model\": \"reference-agent-v1\", \"task_ids\": [\"shop.cart.t013\", \"shop.checkout.t001\"], \"endpoint\": $endpoint}") \
  || { echo "shop run was refused"; exit 1; }
echo "Shop run:   $url/agents$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["status_url"])' "$shop")"
open_run=$(curl -fsS -X POST "$url/agents/runs/open" -H "Authorization: Bearer $api_key" \
  -H "Content-Type: application/json" --data @- <<JSON
{
  "env_id": "shop",
  "task_definition": "Browse headphones and add any pair to cart.",
  "max_steps": 20,
  "profile_id": "U_001",
  "rollouts": 1,
  "endpoint": $endpoint,
  "verifiers": [{"check": "cart_count", "where": {"category": "headphones"}, "op": "==", "value": 1}]
}
JSON
) || { echo "open run was refused"; exit 1; }
echo "Open run:   $url/agents$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["status_url"])' "$open_run")"
echo "Launch more from the dashboard: $url/evaluations/agents/new"
# --- end agent evaluations
echo
echo "Dashboard:  $url  (sign in at $url/accounts/login/ as demo / demo-password)"
echo "Go on with the CLI or rlmesh.platform.Client:"
echo "export RLMESH_PLATFORM_URL=$url"
echo "export RLMESH_API_KEY=$api_key"
echo ".venv/bin/rlmesh eval submit examples/cartpole.json --wait"
