"""An rlmesh model whose ``predict`` takes 200 ms and logs when it ran, one JSON line ``[episode id, start, end]``
per call to ``$SLOW_MODEL_LOG`` (rlmesh's ``episode_id``: which session's episode it served): to see whether a model server runs the predicts of concurrent sessions at once. It also
declares rlmesh's batched corner, ``predict_batch``, which logs ``[thread, start, end, lanes]``: to see whether the
server fuses concurrent sessions' predicts into one batched call."""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import rlmesh


class SlowModel(rlmesh.numpy.Model):
    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER

    def load(self) -> None:
        self.log = open(os.environ["SLOW_MODEL_LOG"], "a")  # noqa: SIM115 - the server's lifetime

    def predict(self, observation, context=None):
        t0 = time.monotonic()
        time.sleep(0.2)
        episode = (context or {}).get("episode_id") or f"thread {threading.get_ident()}"
        self.log.write(json.dumps([episode, t0, time.monotonic()]) + "\n")
        self.log.flush()
        return np.int64(0)

    def predict_batch(self, observations):
        t0 = time.monotonic()
        time.sleep(0.2)
        lanes = int(np.asarray(observations).shape[0])
        self.log.write(json.dumps([threading.get_ident(), t0, time.monotonic(), lanes]) + "\n")
        self.log.flush()
        return np.zeros(lanes, dtype=np.int64)
