"""What ``rlmesh.serve`` builds to describe a LIBERO env server, without building it (issue 26). LIBERO venv.

When an env server starts, rlmesh puts a describe envelope on its handshake: the served env's spaces and, because
``Libero`` declares ``tag_params = ("cameras",)``, the spaces of every other ``cameras`` branch, each read off an env
it builds with the default make kwargs (``rlmesh._describe._build_env``: ``libero_goal/0``) and closes. Two full
LIBERO builds per server start (≈ 2 × 4 s, and up to 1.7 GB more resident while each exists: the 2.86 GB peak the
platform measured) for spaces that depend on nothing but the make kwargs. :func:`describe_build` tells ``Libero.make``
it is such a build; it then returns :class:`LiberoSpaces`, an env with the spaces a built env has (compared in
``tests/test_libero_memory.py``) that cannot be reset. A build with ``privileged=True`` (spaces from the scene) is
still built.
"""

from __future__ import annotations

import string
import sys

import gymnasium as gym
import numpy as np

from .episodes import CAMERA_KEYS, IMAGE_SIZE

__all__ = ["LiberoSpaces", "describe_build", "observation_space"]


def describe_build() -> bool:
    """Whether the caller's ``make`` runs inside rlmesh's describe (``rlmesh/_describe.py``, ``_build_env``)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_build_env" and code.co_filename.replace("\\", "/").endswith("rlmesh/_describe.py"):
            return True
        frame = frame.f_back
    return False


def observation_space(cameras: tuple[str, ...], privileged: gym.Space | None = None) -> gym.spaces.Dict:
    """The observation space of a LIBERO env observing ``cameras`` (and ``privileged``, when given)."""
    spaces: dict[str, gym.Space] = {
        "agent_pos": gym.spaces.Box(-np.inf, np.inf, shape=(8,), dtype=np.float32),
        "instruction": gym.spaces.Text(min_length=1, max_length=256, charset=string.printable),
    }
    if cameras:
        spaces["pixels"] = gym.spaces.Dict({
            CAMERA_KEYS[c]: gym.spaces.Box(0, 255, shape=(IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
            for c in cameras})
    if privileged is not None:
        spaces["privileged"] = privileged
    return gym.spaces.Dict(spaces)


def action_space() -> gym.spaces.Box:
    """7 floats in [-1, 1]: delta position (3), delta rotation (3), gripper."""
    return gym.spaces.Box(-1.0, 1.0, shape=(7,), dtype=np.float32)


class LiberoSpaces(gym.Env):
    """The spaces of a LIBERO env observing ``cameras`` (no privileged state), nothing else: what describe reads."""

    def __init__(self, cameras: tuple[str, ...]):
        self.observation_space = observation_space(tuple(cameras))
        self.action_space = action_space()

    def reset(self, *, seed=None, options=None):
        raise RuntimeError("a describe-only LIBERO env has spaces, no simulator")

    def step(self, action):
        raise RuntimeError("a describe-only LIBERO env has spaces, no simulator")
