"""Batched inference for the episodes one model server serves at once (issue 36), without costing any episode its seed.

The rlmesh model server calls ``predict`` from one thread per session; an episode that needs a new action chunk
hands its preprocessed observation to a :class:`ChunkBatcher`, which gathers the requests that arrive within
``max_wait`` seconds (at most ``size`` of them) into one forward pass, and gives each episode its own rows back.

**A seed still names one episode.** The forward pass always has the same shape: ``size`` rows, the free rows filled
with copies of the first. Measured with lerobot 0.4.4 on CPU (spec/POLICIES.md): the same observation gives actions
that differ by ~1e-7 between batch sizes 1 and 4, but at one batch size a row's output is bit-identical whatever the
other rows hold. So an episode's actions depend on its observations, its seed and ``size``, not on how many episodes
were served beside it: ``workers: 1`` and ``workers: 4`` give the same trajectories. ``size`` is therefore part of
what the model ran with (a ``load`` keyword argument the workload records), and the number of real rows per call
(the batch sizes seen) is reported, never assumed.

**Where it runs.** rlmesh 0.1.0's model server calls ``predict`` one session at a time (two sessions, 16 calls of
200 ms: 3.31 s, none overlapping), so through the platform the batcher lives in the host's inference process
(:mod:`.inference`), which the shards' thin model servers call concurrently; concurrent callers in one process
coalesce the same way (tests/prebuilt/lerobot/test_batching.py). What it did is reported, never assumed: the passes by
real rows and the seconds spent in them (bench/bench_batching.py; docs/running/scaling.md).

Pure Python and threading: torch is used only by the ``compute`` function the model passes in.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections import Counter
from concurrent.futures import Future
from pathlib import Path

__all__ = ["BATCHED_TYPES", "STATS_ENV", "ChunkBatcher", "batchable", "read_stats"]

#: LeRobot types whose chunk is a pure function of the current observation (and, for SmolVLA, of noise the caller
#: passes per row), so ``predict_action_chunk`` batches them row by row: ACT, and SmolVLA with its prompt tokenized
#: to a fixed length (its checkpoints pad to the batch's longest prompt, which would make a row depend on its
#: neighbours' prompts; :mod:`.policy` overrides that when batching). Served one call at a time: types that keep an
#: observation history inside the policy (diffusion, VQ-BeT, TD-MPC); π0 and π0.5 do not load here.
BATCHED_TYPES = frozenset({"act", "smolvla"})
#: The environment variable naming the file where a model server keeps the batch sizes it has seen (JSON
#: ``{"calls": {rows: count}, "size": n, "seconds": s}``); set by the platform's local runtime.
STATS_ENV = "RLMESH_MODEL_STATS"


def batchable(policy_type: str, config) -> bool:
    """Whether a policy of ``policy_type`` with ``config`` is called with batches: its type is in ``BATCHED_TYPES``
    and, for ACT, no temporal ensembling (which keeps a running average inside the policy)."""
    if policy_type not in BATCHED_TYPES:
        return False
    return not (policy_type == "act" and getattr(config, "temporal_ensemble_coeff", None) is not None)


class ChunkBatcher:
    """Gathers concurrent chunk requests into fixed-shape forward passes.

    ``compute(rows) -> list``: one result per row of ``rows`` (a list of ``size`` items, the real ones first);
    called on the batcher's own thread. ``size`` ≥ 1 rows per call; ``max_wait`` seconds (≥ 0) the first request
    of a call waits for others. ``stats_path``: where the batch sizes seen are written after every call, before its
    waiters return (atomic replace), or None. :meth:`submit` raises whatever ``compute`` raised for that call.

    ``peers``: how many callers could send a row now (an inference process's open connections, one per thin server),
    or None when unknown. A call waits for no more rows than that: with 2 shards and batch 4, waiting for rows 3 and
    4 would cost every pass the whole ``max_wait`` (measured: predict p50 6.7 ms against 0.4 ms unbatched for a small
    numpy model). The shape stays ``size`` whatever the count: which rows share a pass never changes a row."""

    def __init__(self, compute, size: int, max_wait: float, stats_path: str | None = None, peers=None):
        if size < 1 or max_wait < 0:
            raise ValueError(f"size must be >= 1 and max_wait >= 0 (got {size}, {max_wait})")
        self.compute, self.size, self.max_wait, self.peers = compute, int(size), float(max_wait), peers
        self.seen: Counter[int] = Counter()
        #: Seconds spent in ``compute`` over the passes in ``seen``.
        self.seconds = 0.0
        self.stats_path = Path(stats_path) if stats_path else None
        self._requests: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="chunk-batcher", daemon=True)
        self._thread.start()

    def submit(self, row):
        """The result of ``row``, computed in a batch with whatever else arrived within ``max_wait``; blocks."""
        future: Future = Future()
        self._requests.put((row, future))
        return future.result()

    def _gather(self) -> list:
        pending = [self._requests.get()]
        deadline = time.monotonic() + self.max_wait
        while len(pending) < self.size:
            if self.peers is not None and len(pending) >= self.peers():
                break  # every caller that could send a row has: none is coming
            left = deadline - time.monotonic()
            try:
                pending.append(self._requests.get(timeout=left) if left > 0 else self._requests.get_nowait())
            except queue.Empty:
                break
        return pending

    def _serve(self) -> None:
        while True:
            pending = self._gather()
            rows = [row for row, _ in pending]
            started = time.monotonic()
            try:
                results = self.compute(rows + [rows[0]] * (self.size - len(rows)))
            except BaseException as exc:  # noqa: BLE001 - handed to every waiting episode
                for _, future in pending:
                    future.set_exception(exc)
                continue
            self.seen[len(rows)] += 1
            self.seconds += time.monotonic() - started
            self._write_stats()  # before any waiter returns, so a caller that has its row sees its call counted
            for (_, future), result in zip(pending, results):
                future.set_result(result)

    def _write_stats(self) -> None:
        if self.stats_path is None:
            return
        tmp = self.stats_path.with_name(self.stats_path.name + ".tmp")
        try:
            tmp.write_text(json.dumps({"size": self.size, "calls": {str(k): v for k, v in sorted(self.seen.items())},
                                       "seconds": round(self.seconds, 4)}))
            os.replace(tmp, self.stats_path)
        except OSError:
            pass  # the numbers are a report; an unwritable file never fails an episode


def read_stats(path: str | Path) -> dict | None:
    """What a model server wrote at ``path`` (``{"size": n, "calls": {rows: count}, "seconds": s}``: ``seconds`` in
    its forward passes, 0.0 from servers that did not say), or None when it wrote nothing readable."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("calls"), dict):
        return None
    seconds = data.get("seconds")
    return {"size": data.get("size"), "calls": {str(k): int(v) for k, v in data["calls"].items()},
            "seconds": float(seconds) if isinstance(seconds, (int, float)) else 0.0}
