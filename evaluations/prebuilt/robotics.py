"""Prebuilt MuJoCo environments: Gymnasium's v5 locomotion tasks and gymnasium-robotics goal-reaching tasks.

Both render headless on the CPU with ``MUJOCO_GL=egl`` (set here before MuJoCo loads; ~23 ms per 128² frame),
only when ``render()`` is called, i.e. only for recorded episodes. Both accept ``physics=s``: at every reset,
each body mass and geom friction is scaled by a factor drawn uniformly from [1 − s, 1 + s] with a generator
seeded by the reset seed, from the nominal values (so a seed always gives the same physics).
"""

from __future__ import annotations

import os

import numpy as np
import rlmesh

os.environ.setdefault("MUJOCO_GL", "egl")

#: Locomotion scenarios: Gymnasium id → display name.
LOCOMOTION: dict[str, str] = {
    "HalfCheetah-v5": "Half cheetah run",
    "Hopper-v5": "Hopper hop",
    "Walker2d-v5": "Walker 2-D walk",
    "Ant-v5": "Ant walk",
}
#: What success means on the locomotion tasks (none reports a flag): Gymnasium's own reward thresholds where
#: registered (HalfCheetah 4800, Hopper 3800, Ant 6000); Walker2d has none, so "did not fall for 1000 steps". Declared
#: with each variant (``rlmesh.Variant(..., success=…)``), so the criterion travels with the env.
LOCOMOTION_CRITERIA: dict[str, dict] = {
    "HalfCheetah-v5": {"kind": "return_at_least", "threshold": 4800.0, "description": "episode return ≥ 4800 (Gymnasium's reward threshold)"},
    "Hopper-v5": {"kind": "return_at_least", "threshold": 3800.0, "description": "episode return ≥ 3800 (Gymnasium's reward threshold)"},
    "Walker2d-v5": {"kind": "survived", "steps": 1000, "description": "the walker stayed upright until the time limit (1000 steps)"},
    "Ant-v5": {"kind": "return_at_least", "threshold": 6000.0, "description": "episode return ≥ 6000 (Gymnasium's reward threshold)"},
}
#: Goal-reaching scenarios: Gymnasium id → (group, display name). Success is the env's own flag.
GOAL_REACHING: dict[str, tuple[str, str]] = {
    "FetchReach-v4": ("fetch", "Fetch arm reach"),
    "PointMaze_UMaze-v3": ("maze", "Point mass, U-maze"),
}


def _physics_wrapper(env, strength: float):
    """Wrap ``env`` so each reset rescales masses and frictions from their nominal values (see module doc)."""
    import gymnasium as gym

    class PhysicsRandomization(gym.Wrapper):
        def __init__(self, inner):
            super().__init__(inner)
            model = inner.unwrapped.model
            self._mass = model.body_mass.copy()
            self._friction = model.geom_friction.copy()
            self.scale: dict[str, float] = {}

        def reset(self, *, seed=None, options=None):
            model = self.env.unwrapped.model
            rng = np.random.default_rng(None if seed is None else [int(seed) & 0xFFFFFFFF, 0x70687973])
            mass_scale = rng.uniform(1 - strength, 1 + strength, self._mass.shape)
            friction_scale = rng.uniform(1 - strength, 1 + strength, (self._friction.shape[0], 1))
            model.body_mass[:] = self._mass * mass_scale
            model.geom_friction[:] = self._friction * friction_scale
            obs, info = self.env.reset(seed=seed, options=options)
            info = {**info, "physics_mass_scale_mean": float(mass_scale.mean())}
            return obs, info

    return PhysicsRandomization(env) if strength else env


class _MuJoCoFactory(rlmesh.EnvFactory):
    workflow_edition = "2026.06"

    @staticmethod
    def _build(env_id: str, physics: float, render_size: int):
        import gymnasium as gym

        env = gym.make(env_id, render_mode="rgb_array", width=render_size, height=render_size)
        return _physics_wrapper(env, float(physics))


class MuJoCoLocomotion(_MuJoCoFactory):
    """Gymnasium MuJoCo v5 locomotion (1000-step episodes). Variant ids ``locomotion/<gymnasium id>``."""

    params = rlmesh.ParamSpec(
        rlmesh.Param("env_id", str, choices=tuple(LOCOMOTION), description="Gymnasium environment id", group="task"),
        rlmesh.Param("physics", float, description="mass/friction randomization strength s in [0, 0.9]"),
        rlmesh.Param("render_size", int, description="side of rendered video frames, pixels"),
    )

    def make(self, env_id: str = "HalfCheetah-v5", physics: float = 0.0, render_size: int = 256):  # type: ignore[override]
        return self._build(env_id, physics, render_size)

    @classmethod
    def enumerate_variants(cls):
        for env_id, name in LOCOMOTION.items():
            yield rlmesh.Variant(f"locomotion/{env_id}", {"env_id": env_id}, name=name, success=LOCOMOTION_CRITERIA[env_id])


class GoalReaching(_MuJoCoFactory):
    """gymnasium-robotics goal-conditioned tasks (observation, achieved_goal, desired_goal); success from the env's
    ``is_success`` (Fetch) or ``success`` (maze) flag. Variant ids ``<group>/<gymnasium id>``."""

    params = rlmesh.ParamSpec(
        rlmesh.Param("env_id", str, choices=tuple(GOAL_REACHING), description="Gymnasium environment id", group="task"),
        rlmesh.Param("physics", float, description="mass/friction randomization strength s in [0, 0.9]"),
        rlmesh.Param("render_size", int, description="side of rendered video frames, pixels"),
    )

    def make(self, env_id: str = "FetchReach-v4", physics: float = 0.0, render_size: int = 256):  # type: ignore[override]
        import gymnasium as gym
        import gymnasium_robotics

        gym.register_envs(gymnasium_robotics)
        return self._build(env_id, physics, render_size)

    @classmethod
    def enumerate_variants(cls):
        for env_id, (group, name) in GOAL_REACHING.items():
            yield rlmesh.Variant(f"{group}/{env_id}", {"env_id": env_id}, name=name, success={"kind": "env_flag"})
