"""A trivial image-reading model for bench/bench_libero.py: reads both LIBERO camera images and the state, acts from
their means (so the images must really cross the model leg), 7 floats in [-1, 1]."""

from __future__ import annotations

import numpy as np
import rlmesh


class ImageMean(rlmesh.numpy.Model):
    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER  # reads the raw observation: pixels.image, pixels.image2, agent_pos

    def predict(self, observation):
        pixels = observation["pixels"]
        level = (float(np.mean(pixels["image"])) + float(np.mean(pixels["image2"]))) / 510.0 - 0.5
        action = np.zeros(7, dtype=np.float32)
        action[:3] = 0.1 * level
        action[6] = -1.0
        return action + 0.0 * np.asarray(observation["agent_pos"], dtype=np.float32)[:7]
