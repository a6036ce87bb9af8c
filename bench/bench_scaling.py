"""Submit → first env step on both brokers, and steps/s with 1, 2 and 4 workers per task, measured in one run (a
benchmark, not a timed test).

Starts a live platform here (gunicorn + Celery as deployed) on the embedded default (SQLite + the database broker)
and, with ``--postgres``, another on PostgreSQL + Redis (both started by the tests' service helpers on private ports).
For each: a few one-episode CartPole submits (latency: evaluation ``createdAt`` → first episode ``startedAt``, i.e.
the moment the servers were ready and the first reset went out, and → ``finishedAt``), then the same 40 CartPole
episodes (heuristic model, 500 steps each) with ``workers`` 1, 2 and 4; steps/s from ``/metrics``.

Usage: ``.venv/bin/python bench/bench_scaling.py [--postgres] [--episodes 40] [--concurrency N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")

TASK = {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1"}


def _submit(live, episodes: int, workers: int = 1) -> str:
    body = {"model": "prebuilt/classic-control-heuristics", "tasks": [{**TASK, "episodes": episodes, "workers": workers}]}
    r = live.cli("eval", "submit", "-", "--json", stdin=json.dumps(body))
    return json.loads(r.stdout)["id"]


def _done(live, eval_id: str) -> dict:
    from tests.support.live import wait_for

    return wait_for(lambda: (e := live.api(f"/v1/evaluations/{eval_id}"))["status"] in ("completed", "failed") and e,
                    timeout=900, interval=0.2)


def _t(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def latency(live, n: int = 5) -> dict:
    """Seconds from createdAt to the first episode's start (servers ready, first reset) and to its end."""
    starts, ends, waits, env_starts, model_starts = [], [], [], [], []
    for _ in range(n):
        eval_id = _submit(live, 1)
        e = _done(live, eval_id)
        ep = live.api(f"/v1/evaluations/{eval_id}/episodes")["items"][0]
        m = live.api(f"/v1/evaluations/{eval_id}/metrics")
        starts.append((_t(ep["startedAt"]) - _t(e["createdAt"])).total_seconds())
        ends.append((_t(ep["finishedAt"]) - _t(e["createdAt"])).total_seconds())
        waits.append(m["queueWaitSeconds"]["p50"])
        env_starts.append(m["serverStartSeconds"]["env"]["p50"])
        model_starts.append(m["serverStartSeconds"]["model"]["p50"])
        time.sleep(0.5)
    return {"submit_to_first_step_s": statistics.median(starts), "min": min(starts), "max": max(starts),
            "submit_to_first_episode_done_s": statistics.median(ends), "queue_wait_s": statistics.median(waits),
            "env_start_s": statistics.median(env_starts), "model_start_s": statistics.median(model_starts)}


def throughput(live, episodes: int, workers: int) -> dict:
    eval_id = _submit(live, episodes, workers)
    e = _done(live, eval_id)
    m = live.api(f"/v1/evaluations/{eval_id}/metrics")
    return {"workers": workers, "status": e["status"], "steps_per_s": m["stepsPerSecond"], "wall_s": m["wallSeconds"]}


def run(live, label: str, episodes: int) -> None:
    if os.environ.get("BENCH_THROUGHPUT_ONLY"):
        rows = [throughput(live, episodes, w) for w in (1, 2, 4)]
        for row in rows:
            print(f"[{label}] workers={row['workers']}: {row['steps_per_s']:.0f} steps/s over {row['wall_s']:.1f} s "
                  f"({row['steps_per_s'] / rows[0]['steps_per_s']:.2f}x workers=1) {row['status']}")
        return
    lat = latency(live)
    if os.environ.get("BENCH_LATENCY_ONLY"):
        print(f"[{label}] {lat}")
        return
    print(f"[{label}] submit → first env step: median {lat['submit_to_first_step_s']:.2f} s "
          f"(min {lat['min']:.2f}, max {lat['max']:.2f}); → first episode done {lat['submit_to_first_episode_done_s']:.2f} s; "
          f"queue wait {lat['queue_wait_s']:.2f} s, env start {lat['env_start_s']:.2f} s, model start {lat['model_start_s']:.2f} s")
    rows = [throughput(live, episodes, w) for w in (1, 2, 4)]
    base = rows[0]["steps_per_s"]
    for row in rows:
        print(f"[{label}] workers={row['workers']}: {row['steps_per_s']:.0f} steps/s over {row['wall_s']:.1f} s "
              f"({row['steps_per_s'] / base:.2f}x workers=1) {row['status']}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", action="store_true", help="also on PostgreSQL + Redis")
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=None, help="worker concurrency (default: the host's cores)")
    args = parser.parse_args()
    from tests.support.live import LivePlatform

    live = LivePlatform(Path(tempfile.mkdtemp(prefix="rlm-bench-"))).prepare()
    live.start_web()
    live.start_worker(concurrency=args.concurrency)
    try:
        run(live, "sqlite + database broker", args.episodes)
    finally:
        live.stop()
    if args.postgres:
        from tests.support.services import scaled_platform

        with scaled_platform(Path(tempfile.mkdtemp(prefix="rlm-bench-")), [None], concurrency=args.concurrency) as live:
            run(live, "postgres + redis", args.episodes)


if __name__ == "__main__":
    main()
