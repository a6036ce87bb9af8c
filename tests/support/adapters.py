"""An env that publishes adapter tags and models that declare a ModelSpec, for the compatibility tests."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import rlmesh
from rlmesh import adapters as a


class ReachEnv(gym.Env):
    """Move a 3-d end effector toward a target; observation {eef, task}; action a delta position in [-1, 1]."""

    def __init__(self):
        self.observation_space = gym.spaces.Dict(
            {"eef": gym.spaces.Box(-2.0, 2.0, (3,), np.float32), "task": gym.spaces.Text(128)}
        )
        self.action_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.pos = np.zeros(3, np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        return {"eef": self.pos, "task": "reach the origin"}, {}

    def step(self, action):
        self.pos = np.clip(self.pos + 0.1 * np.asarray(action, np.float32), -2, 2)
        done = bool(np.linalg.norm(self.pos) < 0.05)
        return {"eef": self.pos, "task": "reach the origin"}, float(-np.linalg.norm(self.pos)), done, False, {"success": done}


class TaggedReach(rlmesh.EnvFactory):
    workflow_edition = "2026.06"
    tags = a.EnvTags(
        observation={"eef": a.StateTag(a.EEF_POS), "task": a.TextTag(a.INSTRUCTION)},
        action=a.Action(a.Actuator(a.ACTION_DELTA_POS, dim=3)),
    )

    def make(self):  # type: ignore[override]
        return ReachEnv()


class ReachModel(rlmesh.numpy.Model):
    """Reads the end-effector position and the instruction; moves toward the origin."""

    workflow_edition = "2026.06"
    spec = a.ModelSpec(
        input={"pos": a.State(a.EEF_POS, dim=3), "text": a.Text(a.INSTRUCTION)},
        output=a.Action(a.Actuator(a.ACTION_DELTA_POS, dim=3)),
    )

    def predict(self, obs):
        return np.clip(-np.asarray(obs["pos"], np.float32) * 10, -1, 1)


class CameraModel(rlmesh.numpy.Model):
    """Wants a primary camera image and outputs 7 joint positions: runs on no state-only env."""

    workflow_edition = "2026.06"
    spec = a.ModelSpec(
        input={"img": a.Image(a.IMAGE_PRIMARY, height=32, width=32)},
        output=a.Action(a.Actuator(a.ACTION_JOINT_POS, dim=7)),
    )

    def predict(self, obs):
        return np.zeros(7, np.float32)


class CrashingReachModel(ReachModel):
    """Same spec as ReachModel, but predict raises (a broken checkpoint)."""

    def predict(self, obs):
        raise RuntimeError("weights not loaded")
