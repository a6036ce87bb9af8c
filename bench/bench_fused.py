"""An rlmesh model's own batched corner, batched across a host's episodes (issue 36; ``evaluations.prebuilt.fused``),
through the platform: episodes per hour, the model servers' memory, the batch sizes seen and the digests, for
``workers`` 1, 2 and 4, one ``rlmesh.serve`` per shard against one inference process per host. A benchmark, not a
timed test::

    .venv/bin/python bench/bench_fused.py [--workers 1 2 4] [--episodes 16] [--batch 4]
        [--out bench/results/fused_<date>.json]

The model: ``prebuilt/ppo/cartpole`` (a PPO actor in numpy, which declares ``predict_batch``) on
``prebuilt/classic-control`` ``classic/CartPole-v1`` (it balances the pole to the 500-step cap). Each cell is a fresh
live platform (gunicorn + one Celery worker whose concurrency is ``workers``; SQLite and the database broker, as
``make demo`` runs), one evaluation of ``--episodes`` episodes (seed 0) on ``workers`` shards:

- ``per-shard``: ``RLMESH_SHARE_MODEL_SERVERS=False``, ``RLMESH_MODEL_BATCH=0``: each shard runs ``rlmesh.serve``
  of the model, which calls ``predict`` one observation at a time;
- ``batched``: ``RLMESH_MODEL_BATCH=--batch``: one inference process per host and a thin server per shard; the
  process calls ``predict_batch`` on passes of ``--batch`` rows.

The forward pass of this model is tens of microseconds, so what the cells compare is the platform's cost of the
extra hop (thin server → inference process), not a saving: the model a host would batch for speed is a large one on
a GPU. The digests say whether a seed still names one episode at every ``workers`` in each mode.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODEL_PROCESSES = ("NumpyMLP", "evaluations.prebuilt.fused")  # rlmesh.serve of the model; thin servers; the process


def model_rss() -> int:
    """Bytes of resident memory of the processes that serve the model (``ps``)."""
    out = subprocess.run(["ps", "-eo", "rss=,args="], capture_output=True, text=True).stdout
    return sum(int(line.split(None, 1)[0]) * 1024 for line in out.splitlines()
               if any(m in line for m in MODEL_PROCESSES) and "bench_fused" not in line)


def cell(mode: str, workers: int, episodes: int, batch: int) -> dict:
    from tests.support.live import LivePlatform

    live = LivePlatform(Path(tempfile.mkdtemp(prefix="rlm-fused-")),
                        RLMESH_SHARE_MODEL_SERVERS="False" if mode == "per-shard" else "True",
                        RLMESH_MODEL_BATCH=str(batch if mode == "batched" else 0), RLMESH_MODEL_BATCH_WAIT_MS="5").prepare()
    live.start_web()
    live.start_worker(concurrency=workers)
    peak, sampling = [0], [True]

    def sample():
        while sampling[0]:
            peak[0] = max(peak[0], model_rss())
            time.sleep(0.5)

    threading.Thread(target=sample, daemon=True).start()
    try:
        task = {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": episodes, "seed": 0,
                "workers": workers, "record": "none"}
        body = {"name": f"fused {mode} workers {workers}", "models": ["prebuilt/ppo/cartpole"], "tasks": [task]}
        done = live.run(body, poll=0.5)
        e, wall, items, metrics = done["evaluation"], done["wallSeconds"], done["items"], done["metrics"]
    finally:
        sampling[0] = False
        live.stop()
    return {"mode": mode, "workers": workers, "status": e["status"], "wallSeconds": round(wall, 1),
            "episodesPerHour": round(len(items) / wall * 3600, 1), "steps": sum(i.get("steps") or 0 for i in items),
            "modelPeakRssMB": round(peak[0] / 2**20), "modelBatches": metrics.get("modelBatches"),
            "predictMsP50": ((metrics.get("latencyMs") or {}).get("predict") or {}).get("p50"),
            "modelBatch": sorted({i.get("modelBatch") for i in items}, key=str),
            "digests": [i.get("trajectoryDigest") for i in items], "statuses": [i["status"] for i in items]}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4])
    p.add_argument("--episodes", type=int, default=16)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--out", default=str(ROOT / f"bench/results/fused_{date.today()}.json"))
    args = p.parse_args(argv)
    from bench.hostinfo import host

    cells = []
    for mode in ("per-shard", "batched"):
        for workers in args.workers:
            c = cell(mode, workers, args.episodes, args.batch)
            cells.append(c)
            batches = c["modelBatches"] or {}
            print(f"{mode:9} workers {workers}: {c['episodesPerHour']:8.1f} eps/h, {c['steps']} steps, "
                  f"predict p50 {c['predictMsP50']} ms, model RSS {c['modelPeakRssMB']} MB, "
                  f"passes {batches.get('calls')}", flush=True)
    same = {mode: len({tuple(c["digests"]) for c in cells if c["mode"] == mode}) == 1 for mode in ("per-shard", "batched")}
    across = len({tuple(c["digests"]) for c in cells}) == 1
    print(f"digests equal across workers: {same}; per-shard = batched: {across}")
    Path(args.out).write_text(json.dumps({"host": host(sys.executable), "episodes": args.episodes, "batch": args.batch,
                                          "cells": cells, "digestsEqualAcrossWorkers": same,
                                          "perShardEqualsBatched": across}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
