"""LIBERO throughput and memory, in one run (a benchmark, not a timed test; issue 18).

Each side times one episode of ``--steps`` steps including its reset (init state + 10 settle steps).

1. **Rendered, served vs in-process**: libero_object/0 with both cameras (256², what a VLA reads). In-process: the env
   (``LiberoTaskEnv`` in ``.venv-libero``) stepped and rendered by a trivial image-reading policy in one process. Served:
   the same env behind ``python -m rlmesh.serve --env`` on a unix socket and the same policy
   (``bench/libero_image_model.py``) behind a model server, driven by the platform's loop
   (``rlmesh.run(RemoteModel, RemoteEnv)``, as ``evaluations.runs.runner`` does). Prints steps/s and the ratio.
2. **State-only vs rendered**, in-process: ``cameras: none`` against ``both``.
3. **workers: 4 vs workers: 1** on a live platform (gunicorn + Celery, SQLite + the database broker): prebuilt/random on
   libero_object/0 (state only, as the planner makes it), steps/s from ``/metrics``, and the peak proportional
   resident memory (PSS) of the LIBERO env servers and their zygote during each run (summed, and per process).
4. **Expert throughput**: prebuilt/libero-expert on libero_object/0, one worker, episodes per minute with
   ``record: none`` and ``record: all`` (``--only-expert`` runs this part alone).
5. **Issue 26, BEFORE / AFTER** (``--before-after``, alone): reset time, env start time, memory per env (first and
   additional, PSS), expert episodes per minute per host, and the libero_object + libero_spatial expert sweep
   through the platform (``--sweep 2x5``: 2 tasks × init states 0-4; ``--sweep full``: 20 × 50, 1,000 episodes),
   BEFORE being the old code path, still selectable (``bench/libero_before_after.py``).

Usage: ``.venv/bin/python bench/bench_libero.py [--steps 120] [--episodes 8]``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")
LIBERO_PYTHON = ROOT / ".venv-libero" / "bin" / "python"
KWARGS = {"suite": "libero_object", "task_index": 0}

IN_PROCESS = """
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from evaluations.prebuilt.libero import Libero
from bench.libero_image_model import ImageMean
cameras, steps = sys.argv[2], int(sys.argv[3])
env = Libero().make(suite="libero_object", task_index=0, cameras=cameras)
policy = ImageMean()
t0 = time.perf_counter()
obs, _ = env.reset(seed=0)
for _ in range(steps):
    action = policy.predict(obs) if cameras == "both" else np.zeros(7, np.float32)
    obs, _, term, trunc, _ = env.step(action)
    if term or trunc:
        obs, _ = env.reset(seed=1)
print(json.dumps({"steps_per_s": steps / (time.perf_counter() - t0)}))
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_process(cameras: str, steps: int) -> float:
    out = subprocess.run([str(LIBERO_PYTHON), "-c", IN_PROCESS, str(ROOT), cameras, str(steps)], cwd=ROOT,
                         capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])["steps_per_s"]


def served(steps: int) -> float:
    import rlmesh

    tmp = Path(tempfile.mkdtemp(prefix="rlm-bench-libero-"))
    env_addr, model_addr = f"unix://{tmp}/env.sock", f"127.0.0.1:{_port()}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([str(LIBERO_PYTHON), "-m", "rlmesh.serve", "--env", "evaluations.prebuilt.libero:Libero",
                          "--address", env_addr, "--kwargs-json", json.dumps({**KWARGS, "cameras": "both"})],
                         cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-m", "rlmesh.serve", "bench.libero_image_model:ImageMean", "--address",
                          model_addr], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                rlmesh.numpy.RemoteEnv(env_addr, connect_timeout_seconds=1).close()
                socket.create_connection(model_addr.split(":"), timeout=1).close()
                break
            except (ConnectionError, OSError, TimeoutError):
                if time.monotonic() > deadline:
                    raise SystemExit("servers not ready") from None
                time.sleep(0.5)
        result = rlmesh.run(rlmesh.RemoteModel(model_addr), rlmesh.RemoteEnv(env_addr), seeds=[0],
                            max_episode_steps=steps)
        (episode,) = result.episodes
        # one episode of ``steps`` steps, its reset (init state + 10 settle steps) included, as in-process
        return episode.steps / episode.duration_s
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)


def _libero_rss() -> list[int]:
    """Proportional resident bytes (PSS: shared pages split between their sharers, so the sum is what the host
    holds) of every LIBERO env server on this host started from this checkout, and of the zygote its state-only
    servers are forked from (``evaluations.prebuilt.libero.zygote``; its children carry its command line)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if str(LIBERO_PYTHON).encode() not in cmd[0] and b".venv-libero" not in cmd[0]:
                continue
            if (b"evaluations.prebuilt.libero:Libero" not in cmd and b"evaluations.prebuilt.libero.zygote" not in cmd) \
                    or Path(f"/proc/{pid}/cwd").resolve() != ROOT:
                continue
            pss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
                       if line.startswith("Pss:"))
            out.append(pss * 1024)
        except (OSError, StopIteration, ValueError):
            continue
    return out


def platform_run(live, episodes: int, workers: int, model: str = "prebuilt/random", record: str = "none") -> dict:
    from tests.support.live import wait_for

    body = {"name": f"bench libero {model} workers={workers} record={record}", "models": [model],
            "tasks": [{"env": "prebuilt/libero", "taskId": "libero_object/0", "episodes": episodes, "workers": workers,
                       "record": record}]}
    r = live.cli("eval", "submit", "-", "--json", stdin=json.dumps(body))
    eval_id = json.JSONDecoder().raw_decode(r.stdout)[0]["id"]
    peak = {"total": 0, "each": 0, "n": 0}
    done = threading.Event()

    def sample():
        while not done.is_set():
            rss = _libero_rss()
            if rss:
                peak.update(total=max(peak["total"], sum(rss)), each=max(peak["each"], max(rss)),
                            n=max(peak["n"], len(rss)))
            time.sleep(0.5)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    e = wait_for(lambda: (e := live.api(f"/v1/evaluations/{eval_id}"))["status"] in ("completed", "failed") and e,
                 timeout=1800)
    done.set()
    thread.join()
    m = live.api(f"/v1/evaluations/{eval_id}/metrics")
    successes = sum(g["successes"] for g in live.api(f"/v1/evaluations/{eval_id}/scores")["groups"])
    return {"workers": workers, "status": e["status"], "steps_per_s": m["stepsPerSecond"], "wall_s": m["wallSeconds"],
            "successes": successes, **{f"rss_{k}": v for k, v in peak.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--skip-platform", action="store_true")
    parser.add_argument("--only-expert", action="store_true", help="only part 4: the expert with and without video")
    parser.add_argument("--before-after", action="store_true", help="only part 5: issue 26's BEFORE / AFTER table")
    parser.add_argument("--sweep", default="2x5", help="part 5's sweep: <tasks>x<init states>, or full (20x50)")
    parser.add_argument("--workers", type=int, default=2, help="part 5: Celery worker processes AFTER")
    parser.add_argument("--sweep-only", action="store_true", help="part 5's sweep alone (AFTER)")
    parser.add_argument("--sweep-minutes", type=float, default=120, help="--sweep-only: cancel it after this long")
    args = parser.parse_args()
    if args.before_after or args.sweep_only:
        from bench.bench_libero_26 import before_after, sweep_only

        if args.sweep_only:
            return sweep_only(args.episodes, args.sweep, args.workers, args.sweep_minutes)
        return before_after(args.episodes, args.sweep, args.workers)
    if args.only_expert:
        return expert_throughput(args.episodes)
    rendered = in_process("both", args.steps)
    platform = served(args.steps)
    print(f"rendered (2 cameras 256²), trivial image-reading model: in-process {rendered:.1f} steps/s, "
          f"served (unix env + TCP model, platform loop) {platform:.1f} steps/s: {platform / rendered:.2f}x in-process")
    state = in_process("none", args.steps * 4)
    print(f"in-process state-only {state:.1f} steps/s vs rendered {rendered:.1f} steps/s: {state / rendered:.1f}x")
    if args.skip_platform:
        return
    from tests.support.live import LivePlatform

    live = LivePlatform(Path(tempfile.mkdtemp(prefix="rlm-bench-"))).prepare()
    live.start_web()
    live.start_worker(concurrency=4)
    try:
        rows = [platform_run(live, args.episodes, w) for w in (1, 4)]
    finally:
        live.stop()
    for row in rows:
        print(f"platform, prebuilt/random state-only, workers={row['workers']}: {row['steps_per_s']:.0f} steps/s over "
              f"{row['wall_s']:.1f} s ({row['steps_per_s'] / rows[0]['steps_per_s']:.2f}x workers=1), peak LIBERO env "
              f"PSS {row['rss_total'] / 2**30:.2f} GB over {row['rss_n']} processes ({row['rss_each'] / 2**30:.2f} GB max each) "
              f"{row['status']}")
    expert_throughput(args.episodes)


def expert_throughput(episodes: int) -> None:
    """4. prebuilt/libero-expert on libero_object/0 through the platform, one worker: episodes per minute without
    video and with every episode recorded (the agentview camera rendered each step, then encoded)."""
    from tests.support.live import LivePlatform

    live = LivePlatform(Path(tempfile.mkdtemp(prefix="rlm-bench-"))).prepare()
    live.start_web()
    live.start_worker(concurrency=1)
    try:
        rows = [platform_run(live, episodes, 1, "prebuilt/libero-expert", record) for record in ("none", "all")]
    finally:
        live.stop()
    for record, row in zip(("none", "all"), rows):
        print(f"platform, prebuilt/libero-expert on libero_object/0, record={record}: {episodes / row['wall_s'] * 60:.1f} "
              f"episodes/min ({row['successes']}/{episodes} successes, {row['steps_per_s']:.0f} steps/s, "
              f"{row['wall_s']:.1f} s) {row['status']}")
    print(f"video costs {rows[1]['wall_s'] / rows[0]['wall_s']:.2f}x the time of no video")


if __name__ == "__main__":
    main()
