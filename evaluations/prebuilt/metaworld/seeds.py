"""Goal and physics seeding of the Meta-World tasks: a pure function of the episode seed, shared by the catalog (main
venv) and the env (Meta-World venv). Needs only numpy."""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["GOAL_SET_SEED", "MAX_EPISODE_STEPS", "NUM_GOALS", "goal_index", "physics_rng"]

MAX_EPISODE_STEPS = 500
NUM_GOALS = 50  # goal/object variations per task (Meta-World's _N_GOALS)
GOAL_SET_SEED = 0  # benchmark seed that generates each task's list of NUM_GOALS variations
_PHYSICS_STREAM = zlib.crc32(b"physics")


def goal_index(seed: int) -> int:
    """The goal/object variation (0..NUM_GOALS-1) an episode reset with ``seed`` uses."""
    return int(seed) % NUM_GOALS


def physics_rng(seed: int | None) -> np.random.Generator:
    """The generator that draws an episode's physics factors (a pure function of the reset seed)."""
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, _PHYSICS_STREAM])
