"""Batched inference through the platform (issue 36 part 3): episodes per hour, memory and the batch sizes seen for
``workers`` 1, 2 and 4, one model server per shard unbatched against one server per host batched, with the
trajectory digests compared. A benchmark, not a timed test::

    .venv/bin/python bench/bench_batching.py [--workers 1 2 4] [--episodes 8] [--max-steps 60] [--batch 4]
        [--out bench/results/batching_<date>.json]

The model: a tiny ACT checkpoint (11 M parameters, random weights) built by lerobot 0.4.4's own classes
(tests/fixtures/build_tiny_lerobot.py), as ``prebuilt/lerobot/tiny-act`` on ``prebuilt/libero`` ``libero_object/0``
with both 256² cameras rendered. Each cell is a fresh live platform (gunicorn + one Celery worker whose concurrency
is ``workers``; SQLite and the database broker, as ``make demo`` runs), one evaluation of ``--episodes`` episodes
(seed 0) on ``workers`` shards:

- ``per-shard``: ``RLMESH_SHARE_MODEL_SERVERS=False``, ``RLMESH_MODEL_BATCH=0``: every shard loads its own copy
  and calls it one observation at a time (as before this issue);
- ``batched``: ``RLMESH_MODEL_BATCH=--batch``: one inference process per host for the evaluation holds the weights
  and the batcher, and each shard's thin rlmesh server asks it (``evaluations.prebuilt.lerobot.inference``);
- ``expert``: ``prebuilt/libero-expert`` with both cameras rendered (``params.cameras: both``), its episodes to
  their end, one shared server (it is served one call at a time).

Measured: wall time submit → completed, episodes per hour, the peak summed RSS of the model servers (sampled every
0.5 s), the evaluation's ``modelBatches`` metric, and whether every cell of a mode gave the same digests. Then the
same policy on the same episodes in LeRobot's own loop (``bench_lerobot_loop.py``: ``lerobot_eval.rollout``, one
env, as ``lerobot-eval --eval.batch_size=1`` runs), and the ratio ours ÷ LeRobot's at ``workers: 1``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
INFERENCE = "evaluations.prebuilt.lerobot.inference"  # the host inference process's command line


#: What ``--model`` names: the checkpoint folder's name under ``RLMESH_LEROBOT_CHECKPOINTS``.
MODELS = ("tiny-act", "smolvla-published")


def build_checkpoint(root: Path, model: str = "tiny-act") -> tuple[Path, dict]:
    """Build ``model``'s checkpoint under ``root`` (``root / model``); returns it and the settings the platform needs
    to load it (SmolVLA: ``RLMESH_SMOLVLA_BACKBONE_DIR``, the backbone folder built beside it)."""
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(root)}
    if model == "tiny-act":
        subprocess.run([str(ROOT / ".venv-lerobot/bin/python"), "tests/fixtures/build_tiny_lerobot.py", str(root),
                        "act"], cwd=ROOT, check=True, capture_output=True, env=env)
        return root / model, {}
    # Random weights at SmolVLA's published shape (450 M parameters; bench/bench_smolvla.py), served as a LeRobot
    # checkpoint whose backbone an operator installs (docs/running/smolvla-weights.md).
    built = Path(tempfile.mkdtemp(prefix="rlm-smolvla-"))
    subprocess.run([str(ROOT / ".venv-lerobot/bin/python"), "bench/bench_smolvla.py", "build-published", str(built)],
                   cwd=ROOT, check=True, capture_output=True, env=env)
    (built / "policy").rename(root / model)
    return root / model, {"RLMESH_SMOLVLA_BACKBONE_DIR": str(built / "backbone")}


def server_rss() -> tuple[int, int]:
    """Bytes of resident memory of the model servers (LeRobot's or the expert's) and of every rlmesh server on the
    machine (``ps``)."""
    out = subprocess.run(["ps", "-eo", "rss=,args="], capture_output=True, text=True).stdout
    rows = [(int(line.split(None, 1)[0]) * 1024, line) for line in out.splitlines()
            if ("rlmesh" in line and "serve" in line) or INFERENCE in line]
    model = ("LeRobotPolicy", "LiberoExpert", INFERENCE)  # thin servers and the host inference process included
    return (sum(b for b, line in rows if any(m in line for m in model)), sum(b for b, _ in rows))


def host() -> dict:
    """What the bits and the speed depend on (``bench/hostinfo.py``), with the torch thread setting."""
    import os

    from bench.hostinfo import host as describe

    return {**describe(str(ROOT / ".venv-lerobot/bin/python")),
            "RLMESH_MODEL_THREADS": os.environ.get("RLMESH_MODEL_THREADS", "1 (default)")}


def cell(checkpoints: Path, mode: str, workers: int, episodes: int, max_steps: int, batch: int,
         wait_ms: float = 10.0, model: str = "tiny-act", settings: dict | None = None,
         request_timeout: float | None = None) -> dict:
    from tests.support.live import LivePlatform

    env = {**(settings or {}), "RLMESH_LEROBOT_CHECKPOINTS": str(checkpoints),
           # a pass of n rows of a large model on a CPU can outlast the 30 s default deadline of a call
           **({"RLMESH_REQUEST_TIMEOUT": str(request_timeout)} if request_timeout else {}),
           "RLMESH_SHARE_MODEL_SERVERS": "False" if mode == "per-shard" else "True",
           "RLMESH_MODEL_BATCH": str(batch if mode == "batched" else 0), "RLMESH_MODEL_BATCH_WAIT_MS": str(wait_ms)}
    live = LivePlatform(Path(tempfile.mkdtemp(prefix="rlm-batching-")), **env).prepare()
    live.start_web()
    live.start_worker(concurrency=workers)
    peak, sampling = [0, 0], [True]

    def sample():
        while sampling[0]:
            peak[:] = [max(a, b) for a, b in zip(peak, server_rss())]
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        model = "prebuilt/libero-expert" if mode == "expert" else f"prebuilt/lerobot/{model}"
        task = {"env": "prebuilt/libero", "taskId": "libero_object/0", "episodes": episodes, "seed": 0,
                "workers": workers, "record": "none", "params": {"cameras": "both"}}
        if mode != "expert":  # the expert runs its episodes to the end (success); random weights to the cap
            task["maxSteps"] = max_steps
        body = {"name": f"batching {mode} workers {workers}", "models": [model], "tasks": [task]}
        done = live.run(body, poll=1)
        e, wall, items, metrics = done["evaluation"], done["wallSeconds"], done["items"], done["metrics"]
    finally:
        sampling[0] = False
        live.stop()
    return {"mode": mode, "workers": workers, "status": e["status"], "wallSeconds": round(wall, 1),
            "episodesPerHour": round(len(items) / wall * 3600, 1), "modelServerPeakRssMB": round(peak[0] / 2**20),
            "allServersPeakRssMB": round(peak[1] / 2**20), "latencyMs": metrics.get("latencyMs"),
            "modelBatches": metrics.get("modelBatches"), "steps": sum(i.get("steps") or 0 for i in items),
            "digests": [i.get("trajectoryDigest") for i in items], "statuses": [i["status"] for i in items]}


def lerobot_loop(folder: Path, episodes: int, max_steps: int, threads: int = 0) -> dict:
    """``bench_lerobot_loop.py`` on the same checkpoint and episodes: its JSON line."""
    import os

    out = subprocess.run([str(ROOT / ".venv-libero/bin/python"), "bench/bench_lerobot_loop.py", str(folder),
                          "--task", "libero_object/0", "--episodes", str(episodes), "--max-steps", str(max_steps),
                          "--threads", str(threads)],
                         cwd=ROOT, check=True, capture_output=True, text=True,
                         env={**os.environ, "MUJOCO_GL": "egl", "PYTHONPATH": str(ROOT),
                              "HOME": tempfile.mkdtemp(prefix="rlm-libero-home-")})
    return json.loads(out.stdout.strip().splitlines()[-1])


MODES = ("per-shard", "batched", "expert")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4])
    p.add_argument("--episodes", type=int, default=8)
    p.add_argument("--max-steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--batch-wait-ms", type=float, default=10.0, help="RLMESH_MODEL_BATCH_WAIT_MS of the batched mode")
    p.add_argument("--skip-lerobot-loop", action="store_true")
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument("--model", default="tiny-act", choices=MODELS,
                   help="the LeRobot checkpoint: the tiny ACT, or SmolVLA at its published size with random weights")
    p.add_argument("--request-timeout", type=float, help="RLMESH_REQUEST_TIMEOUT, s (default: the platform's, 30)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    checkpoints = Path(tempfile.mkdtemp(prefix="rlm-tiny-"))
    folder, settings = build_checkpoint(checkpoints, args.model)
    rows = []
    for workers in args.workers:
        for mode in args.modes:
            row = cell(checkpoints, mode, workers, args.episodes, args.max_steps, args.batch, args.batch_wait_ms,
                       args.model, settings, args.request_timeout)
            rows.append(row)
            print(f"{mode:>9} workers {workers}: {row['wallSeconds']:6.1f} s  {row['episodesPerHour']:7.1f} eps/h  "
                  f"model RSS {row['modelServerPeakRssMB']} MB (all servers {row['allServersPeakRssMB']} MB)  "
                  f"batches {row['modelBatches']}  {row['statuses'].count('completed')}/{len(row['statuses'])} "
                  f"completed", flush=True)
    # On the platform's thread count (RLMESH_MODEL_THREADS, default 1), the same arithmetic as ours; then as
    # lerobot-eval runs it (torch's default).
    import os

    threads = int(os.environ.get("RLMESH_MODEL_THREADS", "1"))
    loops = [] if args.skip_lerobot_loop else [lerobot_loop(folder, args.episodes, args.max_steps, t)
                                               for t in dict.fromkeys([threads, 0])]
    for loop in loops:
        print(f"LeRobot's loop ({loop['threads']} threads): {loop['wallSeconds']:6.1f} s  "
              f"{loop['episodesPerHour']:7.1f} eps/h", flush=True)
    lerobot = loops[0] if loops else None
    summary = {"host": host(), "lerobotLoop": lerobot, "lerobotLoopDefaultThreads": loops[-1] if loops else None}
    for mode in args.modes:
        cells = [r for r in rows if r["mode"] == mode]
        summary[mode] = {"sameDigestsAcrossWorkers": all(c["digests"] == cells[0]["digests"] for c in cells),
                         "throughputVsWorkers1": {c["workers"]: round(c["episodesPerHour"] / cells[0]["episodesPerHour"], 2)
                                                  for c in cells}}
    for r in rows:
        for loop in loops if r["workers"] == 1 and r["mode"] != "expert" else []:
            summary[f"ours ({r['mode']}, workers 1) / LeRobot's loop at {loop['threads']} threads"] = round(
                r["episodesPerHour"] / loop["episodesPerHour"], 2)
    for workers in args.workers if {"per-shard", "batched"} <= set(args.modes) else []:
        a, b = (next(r for r in rows if r["mode"] == m and r["workers"] == workers) for m in ("per-shard", "batched"))
        summary[f"batched/per-shard workers {workers}"] = {
            "episodesPerHour": round(b["episodesPerHour"] / a["episodesPerHour"], 2),
            "modelMemory": round(b["modelServerPeakRssMB"] / max(a["modelServerPeakRssMB"], 1), 2)}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows,
                                        "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
