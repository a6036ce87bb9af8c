#!/usr/bin/env bash
# Stop exactly what `make demo` started, by the pid files it wrote.
set -u
cd "$(dirname "$0")/.."
# `bash scripts/stop.sh worker` stops one of them; no argument stops all.
for name in ${*:-reference-agent worker web}; do  # reference-agent: the demo's agent endpoint (/agents API)
  pidfile="var/$name.pid"
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  # Each was started in its own process group (setsid), so pgid = pid. Stop the whole group even when its
  # leader is already gone (e.g. a kill -9 of the worker leaves its embedded beat and pool children behind).
  if kill -0 "$pid" 2>/dev/null || pgrep -g "$pid" >/dev/null 2>&1; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 50); do pgrep -g "$pid" >/dev/null 2>&1 || break; sleep 0.2; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    echo "stopped $name (process group $pid)"
  fi
  rm -f "$pidfile"
done
