"""A fixed-cost image-observation env and a spec-less model for bench/bench_image_obs.py.

The env returns a 128×128×3 uint8 image (48 KB, the size spec/ENVS.md §4.3 measured stalling on TCP) plus a 4-d
state; it does no rendering, so the benchmark measures the transport only. Episodes last 200 steps.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import rlmesh


class ImageObsEnv(gym.Env):
    def __init__(self, size: int = 128, horizon: int = 200):
        self.observation_space = gym.spaces.Dict({
            "image": gym.spaces.Box(0, 255, (size, size, 3), np.uint8),
            "state": gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
        })
        self.action_space = gym.spaces.Discrete(2)
        self.horizon = horizon
        self.t = 0
        self.frame = np.zeros((size, size, 3), np.uint8)

    def _obs(self):
        self.frame[self.t % self.frame.shape[0]] = self.t % 255
        return {"image": self.frame, "state": np.full(4, self.t, np.float32)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 1.0, False, self.t >= self.horizon, {}


class ImageObs(rlmesh.EnvFactory):
    workflow_edition = "2026.06"

    def make(self, size: int = 128):  # type: ignore[override]
        return ImageObsEnv(size=size)


class Constant(rlmesh.numpy.Model):
    """Always action 0; reads the whole observation (spec-less), so the image crosses the model leg too."""

    workflow_edition = "2026.06"

    def predict(self, obs):
        return 0
