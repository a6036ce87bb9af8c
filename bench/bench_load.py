"""Load on the API as deployed: gunicorn + PostgreSQL seeded with 10,000 evaluations and 1,000,000 episodes, then
50 concurrent submitters and 200 pollers (get, list, scores) for 60 s. A benchmark, not a timed test.

Prints, in one run: the unloaded p50/p95 of get / list / scores at that size (sequential requests); the web tier's
ceilings on this host (requests/s of ``/v1/info``, which touches no database, and of ``/v1/me``, which only
authenticates, each alone for 10 s); then under load the error count and rate, requests per second and p50/p95/p99
per kind (submit, get, list, scores), and where the CPU went: cores used by gunicorn, PostgreSQL, Redis, ``wrk`` and
the submitter threads, and gunicorn's CPU milliseconds per request. Pollers run as ``wrk`` processes (Debian's
``wrk``: 200 connections split over the three GET kinds); submitters as Python threads.

Usage: ``.venv/bin/python bench/bench_load.py [--evaluations 10000] [--episodes-per 100] [--seconds 60]
[--submitters 50] [--pollers 200]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
local fixed = {info = "/v1/info", me = "/v1/me", list = "/v1/evaluations?limit=25"}
request = function()
  local id = ids[math.random(#ids)]
  local path = fixed[kind] or kind == "get" and "/v1/evaluations/" .. id or "/v1/evaluations/" .. id .. "/scores"
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


def _wrk(live, lua: Path, ids_file: str, kind: str, connections: int, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "BENCH_IDS": ids_file, "BENCH_KEY": live.api_key, "BENCH_KIND": kind}
    return subprocess.Popen(["wrk", "-t", "1", "-c", str(connections), "-d", f"{int(seconds)}s", "--timeout", "30s",
                             "-s", str(lua), live.url], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wrk_result(kind: str, proc: subprocess.Popen) -> tuple[int, int, float, float, float, float]:
    """(requests, errors, seconds, p50, p95, p99 in ms) from the RESULT line of WRK_LUA's ``done``."""
    output = proc.communicate()[0]
    line = next((line for line in output.splitlines() if line.startswith("RESULT")), None)
    if line is None:
        raise RuntimeError(f"wrk ({kind}) printed no result:\n{output}")
    n, status_errors, socket_errors, duration_us, p50, p95, p99, _ = line.split()[1:]
    return (int(n), int(status_errors) + int(socket_errors), float(duration_us) / 1e6, float(p50), float(p95),
            float(p99))


def ceilings(live, lua: Path, ids_file: str, seconds: float = 10) -> None:
    """Requests/s of an endpoint without a database query and of one that only authenticates, each alone: what the
    web tier can serve on this host before any work of our own."""
    for kind, what in (("info", "no database"), ("me", "authentication only")):
        n, errors, duration, p50, _, _ = _wrk_result(kind, _wrk(live, lua, ids_file, kind, 50, seconds))
        print(f"ceiling  {kind:6s}: {n / duration:6.1f} req/s  p50 {p50:.1f} ms  errors {errors}  ({what})")


#: The CPU breakdown's groups, by program name (gunicorn and postgres retitle their processes "name: …").
CPU_GROUPS = {"gunicorn": "gunicorn", "postgres": "postgresql", "redis-server": "redis"}


def _processes() -> dict[int, tuple[int, str, float]]:
    """pid → (parent pid, program name, CPU seconds: its own user + system and that of its children it reaped),
    from /proc (Linux). A reaped child's time is in its parent's, so PostgreSQL backends that closed meanwhile
    still count (in the postmaster's)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        program = os.path.basename(argv0.split(" ", 1)[0]).rstrip(":")
        found[int(pid)] = (int(fields[1]), program, sum(int(f) for f in fields[11:15]) / tick)
    return found


def cpu_seconds(live) -> dict[str, float]:
    """CPU seconds used so far by this platform's processes, per group: CPU_GROUPS among the descendants of this
    bench process, of its PostgreSQL postmaster and of its Redis; ``wrk`` (this process's reaped children); and
    this process itself (the submitter threads). Other programs on the host are not counted."""
    processes = _processes()
    roots = {os.getpid(), live.redis.proc.pid,
             int((live.postgres.data / "postmaster.pid").read_text().split()[0])}

    def ours(pid: int) -> bool:
        while pid > 1 and pid in processes:
            if pid in roots:
                return True
            pid = processes[pid][0]
        return False

    totals = dict.fromkeys(CPU_GROUPS.values(), 0.0)
    for pid, (_, program, seconds) in processes.items():
        if program in CPU_GROUPS and ours(pid):
            totals[CPU_GROUPS[program]] += seconds
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # wrk, once waited for
    totals["wrk"] = children.ru_utime + children.ru_stime
    usage = resource.getrusage(resource.RUSAGE_SELF)
    totals["submitters"] = usage.ru_utime + usage.ru_stime
    return totals


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


def loaded(live, lua: Path, ids_file: str, args) -> None:
    per = max(1, args.pollers // 3)
    cpu_before, t0 = cpu_seconds(live), time.monotonic()
    wrks = {kind: _wrk(live, lua, ids_file, kind, per, args.seconds) for kind in ("get", "list", "scores")}
    sub = {"times": [], "errors": 0}
    submitters(live, args.submitters, args.seconds, sub)
    total_get, errors = 0, 0
    for kind, proc in wrks.items():
        n, kind_errors, duration, p50, p95, p99 = _wrk_result(kind, proc)
        rate = n / duration
        total_get += rate
        errors += kind_errors
        print(f"loaded   {kind:6s}: {rate:6.1f} req/s  p50 {p50:.1f} ms  p95 {p95:.1f} ms  p99 {p99:.1f} ms  "
              f"errors {kind_errors}")
    elapsed = time.monotonic() - t0
    used = {name: seconds - cpu_before[name] for name, seconds in cpu_seconds(live).items()}
    t = sub["times"]
    print(f"loaded   submit: {len(t) / args.seconds:6.1f} req/s  p50 {_pct(t, 50):.1f} ms  p95 {_pct(t, 95):.1f} ms  "
          f"p99 {_pct(t, 99):.1f} ms  errors {sub['errors']}")
    total = len(t) + total_get * args.seconds
    print(f"under load: {total_get:.0f} GET/s; errors {errors + sub['errors']} of {total:.0f} requests "
          f"({(errors + sub['errors']) / max(total, 1):.4%})")
    print(f"CPU under load ({os.cpu_count()} cores): " + ", ".join(f"{name} {seconds / elapsed:.2f}" for name, seconds in used.items())
          + f" cores; gunicorn {used['gunicorn'] * 1000 / max(total, 1):.1f} ms of CPU per request")


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
        lua = live.var / "poll.lua"
        lua.write_text(WRK_LUA)
        unloaded(live, info["ids"])
        ceilings(live, lua, str(ids_file))
        loaded(live, lua, str(ids_file), args)


if __name__ == "__main__":
    main()
