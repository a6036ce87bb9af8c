"""rlmesh models for CartPole that define rlmesh's batched corner ``predict_batch`` and use everything a batched row
carries (``python://tests.support.fused_model:<Class>``; tests/prebuilt/test_fused.py):

- a small numpy MLP over the batch (a row-independent forward, one matrix product for all rows);
- noise drawn per row from rlmesh's ``predict_seed`` (the episode's seed and how many predicts it has had);
- per-episode ``state``: a count of the episode's predicts, which moves the action.

So a row that got another episode's context, or an episode whose predicts were counted twice, acts otherwise. Each
pass is logged to ``$FUSED_MODEL_LOG`` as one JSON line ``{"rows": n, "episodes": [ids of the real rows]}`` and each
episode end as ``{"end": id}``: what the model saw, read back by the test."""

from __future__ import annotations

import json
import os

import numpy as np
import rlmesh


class FusedPolicy(rlmesh.numpy.Model):
    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER

    def load(self, hidden: int = 8) -> None:
        rng = np.random.default_rng(0)
        self.w, self.v = rng.normal(size=(4, hidden)), rng.normal(size=hidden)
        path = os.environ.get("FUSED_MODEL_LOG")
        self.log = open(path, "a") if path else None  # noqa: SIM115 - the server's lifetime

    def _write(self, record: dict) -> None:
        if self.log is not None:
            self.log.write(json.dumps(record) + "\n")
            self.log.flush()

    def predict_batch(self, observations, context):
        hidden = np.tanh(np.asarray(observations, dtype=np.float64) @ self.w)
        actions = []
        for row, ctx in zip(hidden, context):
            noise = 0.0 if ctx["predict_seed"] is None else np.random.default_rng(ctx["predict_seed"]).normal()
            ctx["state"]["n"] = ctx["state"].get("n", 0) + 1
            actions.append(int(row @ self.v + 0.5 * noise + 0.02 * (ctx["state"]["n"] % 7) > 0))
        self._write({"rows": len(actions), "episodes": [c["episode_id"] for c in context if c["episode_id"]]})
        return np.asarray(actions, dtype=np.int64)

    def on_episode_end(self, episode_id: str = "") -> None:
        self._write({"end": episode_id})


class UnfusablePolicy(FusedPolicy):
    """The same model, declaring that its batched forward must not mix episodes (rlmesh's ``allow_fusion``)."""

    allow_fusion = False


class SpecInLoad(FusedPolicy):
    """Sets its spec in ``load()``, where rlmesh reads it when it serves: a thin server, declaring the class's, would
    adapt otherwise."""

    def load(self, hidden: int = 8) -> None:
        super().load(hidden)
        self.spec = None
