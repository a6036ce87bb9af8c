"""Fixed-cost image-observation envs and a spec-less model for bench/bench_image_obs.py.

``ImageObs`` returns a 128×128×3 uint8 image (48 KB, the size spec/ENVS.md §4.3 measured stalling on TCP) plus a 4-d
state. ``LiberoObs`` returns what LeRobot's LIBERO wrapper delivers (``lerobot/envs/libero.py``, ``obs_type=
"pixels_agent_pos"`` flattened as LeRobot's preprocessing reads it): two 256×256×3 uint8 camera images under
``pixels/image`` (agentview) and ``pixels/image2`` (eye-in-hand) plus an 8-d float32 ``agent_pos``, ~384 KB a step.
Neither renders, so the benchmark measures the transport only. Episodes last 200 steps.
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


class LiberoObsEnv(ImageObsEnv):
    """LIBERO-shaped observations (two 256² cameras + 8-d state) and LIBERO's 7-d action in [-1, 1]."""

    def __init__(self, size: int = 256, horizon: int = 200):
        camera = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.observation_space = gym.spaces.Dict({
            "pixels": gym.spaces.Dict({"image": camera, "image2": camera}),
            "agent_pos": gym.spaces.Box(-np.inf, np.inf, (8,), np.float32),
        })
        self.action_space = gym.spaces.Box(-1.0, 1.0, (7,), np.float32)
        self.horizon = horizon
        self.t = 0
        self.frames = (np.zeros((size, size, 3), np.uint8), np.zeros((size, size, 3), np.uint8))

    def _obs(self):
        for frame in self.frames:  # a changing row, so nothing can cache the payload
            frame[self.t % frame.shape[0]] = self.t % 255
        return {"pixels": {"image": self.frames[0], "image2": self.frames[1]},
                "agent_pos": np.full(8, self.t, np.float32)}


class ImageObs(rlmesh.EnvFactory):
    workflow_edition = "2026.06"

    def make(self, size: int = 128):  # type: ignore[override]
        return ImageObsEnv(size=size)


class LiberoObs(rlmesh.EnvFactory):
    workflow_edition = "2026.06"

    def make(self, size: int = 256):  # type: ignore[override]
        return LiberoObsEnv(size=size)


class Constant(rlmesh.numpy.Model):
    """Always action 0; reads the whole observation (spec-less), so the image crosses the model leg too."""

    workflow_edition = "2026.06"

    def predict(self, obs):
        _read_images(obs)
        return 0


class LiberoConstant(rlmesh.numpy.Model):
    """LIBERO's no-op action (7 zeros); reads both camera images first, as a VLA would."""

    workflow_edition = "2026.06"

    def predict(self, obs):
        _read_images(obs)
        return np.zeros(7, np.float32)


def _read_images(obs) -> float:
    """Touch every pixel of every image in ``obs`` (a mean per image), so the model really reads what it received."""
    if isinstance(obs, dict):
        return sum(_read_images(value) for value in obs.values())
    array = np.asarray(obs)
    return float(array.mean()) if array.dtype == np.uint8 else 0.0
