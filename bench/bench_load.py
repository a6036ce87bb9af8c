"""Load on the API as deployed: gunicorn + PostgreSQL seeded with 10,000 evaluations and 1,000,000 episodes, then
50 concurrent submitters and 200 pollers (get, list, scores) for 60 s. A benchmark, not a timed test.

Prints, in one run: the unloaded p50/p95 of get / list / scores at that size (sequential requests), then under load
the error count and rate, requests per second and p50/p95/p99 per kind (submit, get, list, scores). Pollers run as
``wrk`` processes (Debian's ``wrk``: 200 connections split over the three GET kinds); submitters as Python threads.

Usage: ``.venv/bin/python bench/bench_load.py [--evaluations 10000] [--episodes-per 100] [--seconds 60]
[--submitters 50] [--pollers 200]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")

REQUEST = {"name": "load", "model": "prebuilt/classic-control-heuristics",
           "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 10}]}
SEED_SCRIPT = r'''
import json, os, sys, time
import django
django.setup()
from django.db import connection
from evaluations.models import Episode, Evaluation, Organization, Shard, Workload
from evaluations.planning import plan_evaluation

n_evals, per = int(sys.argv[1]), int(sys.argv[2])
org = Organization.objects.get(slug="demo")
plan = plan_evaluation(json.loads(sys.argv[3]), organization=org)
t0 = time.monotonic()
fields = plan.evaluation_fields()
evaluations = Evaluation.objects.bulk_create(
    [Evaluation(organization=org, request_raw=sys.argv[3], status="completed", completed_episodes=per,
                **{**fields, "total_episodes": per}) for _ in range(n_evals)], batch_size=2000)
(planned,) = plan.workloads
row = planned.row_fields()
workloads = Workload.objects.bulk_create(
    [Workload(evaluation=e, index=0, **{**row, "episodes": per}) for e in evaluations], batch_size=2000)
Shard.objects.bulk_create([Shard(evaluation_id=w.evaluation_id, workload=w, index=0, start=0, stop=per,
                                 status="completed") for w in workloads], batch_size=2000)
given = {
    "evaluation_id": "w.evaluation_id", "workload_id": "w.id", "shard_id": "NULL", "index": "g", "seed": "g",
    "status": "'completed'", "reward": "random() * 500", "success": "random() < 0.7", "success_source": "'criterion'",
    "steps": "(random() * 500)::int", "terminated": "false", "truncated": "true", "stop_condition": "'time_limit'",
    "wall_ms": "random() * 2000", "started_at": "now()", "finished_at": "now()",
}
columns, values = [], []
for f in Episode._meta.concrete_fields:
    if f.primary_key:
        continue
    columns.append(connection.ops.quote_name(f.column))
    if f.column in given:
        values.append(given[f.column])
    elif f.null:
        values.append("NULL")
    else:
        default = f.get_default()
        literal = json.dumps(default) if f.get_internal_type() == "JSONField" else str(default)
        values.append("'" + literal.replace("'", "''") + "'")
with connection.cursor() as cursor:
    cursor.execute(f"INSERT INTO evaluations_episode ({', '.join(columns)}) SELECT {', '.join(values)} "
                   f"FROM evaluations_workload w CROSS JOIN generate_series(0, %s) g", [per - 1])
    cursor.execute("ANALYZE")
print(json.dumps({"seconds": round(time.monotonic() - t0, 1), "ids": [e.public_id for e in evaluations[:2000]]}))
'''
WRK_LUA = r'''
local ids = {}
for line in io.lines(os.getenv("BENCH_IDS")) do ids[#ids + 1] = line end
local key, kind = os.getenv("BENCH_KEY"), os.getenv("BENCH_KIND")
request = function()
  local id = ids[math.random(#ids)]
  local path = kind == "get" and "/v1/evaluations/" .. id or kind == "scores" and "/v1/evaluations/" .. id .. "/scores"
               or "/v1/evaluations?limit=25"
  return wrk.format("GET", path, {["Authorization"] = "Bearer " .. key})
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %.3f %.3f %.3f %.3f\n", summary.requests, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.duration,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000, latency.mean / 1000))
end
'''


def _get(url: str, key: str) -> float:
    t0 = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"}), timeout=60) as r:
        r.read()
    return (time.perf_counter() - t0) * 1000


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] if ordered else float("nan")


def unloaded(live, ids: list[str], n: int = 60) -> None:
    for kind, path in (("get", "/v1/evaluations/{}"), ("list", "/v1/evaluations?limit=25"), ("scores", "/v1/evaluations/{}/scores")):
        times = [_get(live.url + path.format(ids[i % len(ids)]), live.api_key) for i in range(n)]
        print(f"unloaded {kind:6s}: p50 {statistics.median(times):.1f} ms  p95 {_pct(times, 95):.1f} ms")


def submitters(live, count: int, seconds: float, out: dict) -> None:
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def run():
        body = json.dumps(REQUEST).encode()
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            req = urllib.request.Request(f"{live.url}/v1/evaluations", data=body, method="POST",
                                         headers={"Authorization": f"Bearer {live.api_key}", "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    ok = r.status == 201
                    r.read()
            except Exception:  # noqa: BLE001 - every failure counts as an error
                ok = False
            with lock:
                out["times"].append((time.perf_counter() - t0) * 1000)
                out["errors"] += not ok

    threads = [threading.Thread(target=run) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def loaded(live, ids_file: str, args) -> None:
    lua = Path(tempfile.mkdtemp()) / "poll.lua"
    lua.write_text(WRK_LUA)
    env = {**os.environ, "BENCH_IDS": ids_file, "BENCH_KEY": live.api_key}
    per = max(1, args.pollers // 3)
    wrks = {kind: subprocess.Popen(["wrk", "-t", "1", "-c", str(per), "-d", f"{int(args.seconds)}s", "--timeout", "30s",
                                    "-s", str(lua), live.url], env={**env, "BENCH_KIND": kind},
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for kind in ("get", "list", "scores")}
    sub = {"times": [], "errors": 0}
    submitters(live, args.submitters, args.seconds, sub)
    total_get, errors = 0, 0
    for kind, proc in wrks.items():
        output = proc.communicate()[0]
        line = next((line for line in output.splitlines() if line.startswith("RESULT")), None)
        if line is None:
            raise RuntimeError(f"wrk ({kind}) printed no result:\n{output}")
        n, status_errors, socket_errors, duration_us, p50, p95, p99, _ = line.split()[1:]
        rate = int(n) / (float(duration_us) / 1e6)
        total_get += rate
        errors += int(status_errors) + int(socket_errors)
        print(f"loaded   {kind:6s}: {rate:6.1f} req/s  p50 {float(p50):.1f} ms  p95 {float(p95):.1f} ms  p99 {float(p99):.1f} ms  "
              f"errors {int(status_errors) + int(socket_errors)}")
    t = sub["times"]
    print(f"loaded   submit: {len(t) / args.seconds:6.1f} req/s  p50 {_pct(t, 50):.1f} ms  p95 {_pct(t, 95):.1f} ms  "
          f"p99 {_pct(t, 99):.1f} ms  errors {sub['errors']}")
    total = len(t) + total_get * args.seconds
    print(f"under load: {total_get:.0f} GET/s; errors {errors + sub['errors']} of {total:.0f} requests "
          f"({(errors + sub['errors']) / max(total, 1):.4%})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--evaluations", type=int, default=10_000)
    parser.add_argument("--episodes-per", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--submitters", type=int, default=50)
    parser.add_argument("--pollers", type=int, default=200)
    args = parser.parse_args()
    from tests.support.services import scaled_platform

    with scaled_platform(Path(tempfile.mkdtemp(prefix="rlm-load-")), web=False) as live:
        seeded = subprocess.run([sys.executable, "-c", SEED_SCRIPT, str(args.evaluations), str(args.episodes_per),
                                 json.dumps(REQUEST)], cwd=ROOT, env=live.env, capture_output=True, text=True, check=True)
        info = json.loads(seeded.stdout.strip().splitlines()[-1])
        print(f"seeded {args.evaluations} evaluations × {args.episodes_per} episodes in {info['seconds']} s")
        ids_file = live.var / "ids.txt"
        ids_file.write_text("\n".join(info["ids"]) + "\n")
        live.start_web()
        unloaded(live, info["ids"])
        loaded(live, str(ids_file), args)


if __name__ == "__main__":
    main()
