"""Platform overhead vs the bare rlmesh loop, measured in one run (not a timed test).

(a) Through the platform: submit N CartPole episodes (heuristic model, one worker) to a live platform
    started here (real web server, real Celery worker, SQLite); wall time = first episode's start to
    the last episode's end (from /v1/metrics); plus submit → first episode start.
(b) Bare: the same env and model servers, started the same way (the local runtime: env on a unix
    socket, model on TCP), driven by one ``rlmesh.run(RemoteModel, env address, seeds=range(N))``.

Prints steps/s of both and the ratio. Usage: ``.venv/bin/python bench/bench_platform.py [N]``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rlmesh_site.settings")
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")


def bare(n: int) -> dict:
    import django

    django.setup()
    import rlmesh

    from evaluations.runtime import ServerSpec
    from evaluations.runtime.local import LocalRuntime

    runtime = LocalRuntime()
    env = runtime.start(ServerSpec("env", "python://evaluations.prebuilt.envs:ClassicControl", {"env_id": "CartPole-v1"}), name="bench-env")
    model = runtime.start(ServerSpec("model", "python://evaluations.prebuilt.models:ClassicControlHeuristics"), name="bench-model")
    try:
        t0 = time.perf_counter()
        result = rlmesh.run(rlmesh.RemoteModel(model.address), env.address, seeds=range(n))
        wall = time.perf_counter() - t0
    finally:
        env.stop()
        model.stop()
    steps = sum(e.steps for e in result.episodes)
    return {"wall": wall, "steps": steps, "server_start": (env.ready_seconds, model.ready_seconds)}


def platform(n: int) -> dict:
    from tests.support.live import LivePlatform, wait_for

    live = LivePlatform(Path(tempfile.mkdtemp(prefix="rlm-bench-"))).start()
    try:
        request = {"model": "prebuilt/classic-control-heuristics",
                   "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": n}]}
        submitted_at = datetime.now().astimezone()
        r = live.cli("eval", "submit", "-", "--json", stdin=json.dumps(request))
        eval_id = json.loads(r.stdout)["id"]
        wait_for(lambda: live.api(f"/v1/evaluations/{eval_id}")["status"] in ("completed", "failed"), timeout=1800, interval=0.5)
        metrics = live.api(f"/v1/evaluations/{eval_id}/metrics")
        episodes = live.api(f"/v1/evaluations/{eval_id}/episodes?limit=1000")["items"]
        logs = live.api(f"/v1/evaluations/{eval_id}/logs")["items"]
    finally:
        live.stop()
    def at(value: str) -> datetime:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))

    shard_start = min(at(line["at"]) for line in logs if "started" in line["message"])
    first_reset = min(at(e["startedAt"]) for e in episodes)
    return {"wall": metrics["wallSeconds"], "steps": metrics["steps"], "metrics": metrics,
            "submit_to_shard_start": (shard_start - submitted_at).total_seconds(),
            "submit_to_first_episode": (first_reset - submitted_at).total_seconds()}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    b = bare(n)
    p = platform(n)
    print(f"CartPole-v1, heuristic model, {n} episodes, 1 shard (env over unix socket, model over TCP)")
    print(f"  bare rlmesh.run(RemoteModel, env):  {b['steps']:>6} steps in {b['wall']:.2f} s = {b['steps'] / b['wall']:.0f} steps/s")
    print(f"  through the platform:               {p['steps']:>6} steps in {p['wall']:.2f} s = {p['steps'] / p['wall']:.0f} steps/s")
    print(f"  platform / bare wall time:          {p['wall'] / b['wall']:.3f}x")
    print(f"  submit -> shard start (claim + queue): {p['submit_to_shard_start']:.2f} s")
    print(f"  submit -> first episode starts (servers ready, first reset): {p['submit_to_first_episode']:.2f} s")
    m = p["metrics"]
    print(f"  server start (platform, env/model p50): {m['serverStartSeconds']['env']['p50']:.2f} / {m['serverStartSeconds']['model']['p50']:.2f} s; "
          f"bare: {b['server_start'][0]:.2f} / {b['server_start'][1]:.2f} s")
    print(f"  per-step latency p50/p95: predict {m['latencyMs']['predict']['p50']:.2f}/{m['latencyMs']['predict']['p95']:.2f} ms, "
          f"env step {m['latencyMs']['envStep']['p50']:.2f}/{m['latencyMs']['envStep']['p95']:.2f} ms")


if __name__ == "__main__":
    main()
