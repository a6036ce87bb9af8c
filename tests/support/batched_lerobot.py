"""Drive :class:`evaluations.prebuilt.lerobot.policy.LeRobotPolicy` as the rlmesh model server does (one thread per
session, each episode its own ``context``), on LIBERO-shaped observations, and print what each episode received.
Runs in ``.venv-lerobot`` (lerobot 0.4.4)::

    .venv-lerobot/bin/python tests/support/batched_lerobot.py <checkpoint folder> <batch> <episodes> <steps> <serial|concurrent>

Episode ``i``'s observations are a pure function of ``(i, step)`` (seeded images, state and instruction), so the
same episode gets the same inputs however the episodes are interleaved. ``serial`` runs the episodes one after the
other; ``concurrent`` runs them at once from one thread each, released together at every step, so their chunk
requests meet in the batcher. ``remote-serial`` and ``remote-concurrent`` do the same through the host inference
process at ``$RLMESH_INFERENCE_ADDRESS`` (key in ``$RLMESH_INFERENCE_KEY``), each episode from a thin model of its own
(its own connection, as each shard's thin server has); ``batch`` is then the inference process's. Prints one JSON object: ``{"episodes": {i: sha256 of the action bytes}, "first":
{i: first action}, "batches": {rows: calls}}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def observation(episode: int, step: int) -> dict:
    rng = np.random.default_rng([episode, step])
    return {"pixels": {"image": rng.integers(0, 256, (256, 256, 3), dtype=np.uint8),
                       "image2": rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)},
            "agent_pos": rng.standard_normal(8).astype(np.float32),
            # prompts of three lengths: a batched VLA must not let a row's prompt depend on its neighbours'
            "instruction": np.array(" ".join(["pick", "up", "the", "object"] + ["and", "put", "it", "down"][: episode % 3]))}


def main() -> None:
    folder, batch, n, steps, mode = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    from evaluations.prebuilt.lerobot.policy import LeRobotPolicy

    remote = mode.startswith("remote-")
    model = LeRobotPolicy()
    if remote:
        model.load(inference=os.environ["RLMESH_INFERENCE_ADDRESS"])
    else:
        model.load(folder=folder.name, root=str(folder.parent), batch=batch, batch_wait_ms=50.0, threads=1)
    actions: dict[int, list] = {i: [] for i in range(n)}

    def run(i: int, barrier: threading.Barrier | None) -> None:
        own = model
        if remote and barrier is not None:  # a thin server per episode, as each shard has
            own = LeRobotPolicy()
            own.load(inference=os.environ["RLMESH_INFERENCE_ADDRESS"])
        context = {"state": {}, "episode_seed": i}
        for t in range(steps):
            if barrier is not None:
                barrier.wait()
            actions[i].append(own.predict(observation(i, t), context))

    if mode.endswith("serial"):
        for i in range(n):
            run(i, None)
    else:
        barrier = threading.Barrier(n)
        threads = [threading.Thread(target=run, args=(i, barrier)) for i in range(n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    print(json.dumps({
        "episodes": {i: hashlib.sha256(np.stack(a).tobytes()).hexdigest() for i, a in actions.items()},
        "first": {i: a[0].tolist() for i, a in actions.items()},
        "batches": dict(model.batcher.seen) if getattr(model, "batcher", None) is not None else None}))


if __name__ == "__main__":
    main()
