"""The Meta-World task env behind :class:`evaluations.prebuilt.metaworld.MetaWorld`: one V3 task (MT1, goal
observable) with seed-determined goals and physics, and an upright corner-camera image. Runs in the Meta-World venv
(``python+metaworld://``); importing it needs gymnasium and MuJoCo, not Meta-World itself."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .seeds import GOAL_SET_SEED, MAX_EPISODE_STEPS, NUM_GOALS, goal_index, physics_rng

__all__ = ["MetaWorldTaskEnv"]

CAMERA = "corner"


def _text_space():
    import string

    return gym.spaces.Text(min_length=1, max_length=64, charset=string.ascii_lowercase + string.digits + "-")


class _Camera:
    """Offscreen renderer of the corner camera at one square size; frames come back upright, not mirrored."""

    def __init__(self, model, size: int):
        import mujoco

        vis = model.vis.global_
        vis.offwidth = max(int(vis.offwidth), size)
        vis.offheight = max(int(vis.offheight), size)
        self.renderer = mujoco.Renderer(model, height=size, width=size)

    def render(self, data) -> np.ndarray:
        self.renderer.update_scene(data, camera=CAMERA)
        # The corner camera is rolled 180 degrees (xyaxes="-1 1 0 -0.2 -0.2 -1": its image "up" is world
        # down), so its frames are upside down AND mirrored; rotating by 180 degrees makes them match an
        # upright camera at the same pose (a vertical flip alone would leave them mirrored left-right).
        return np.ascontiguousarray(self.renderer.render()[::-1, ::-1])

    def close(self) -> None:
        self.renderer.close()


class MetaWorldTaskEnv(gym.Env):
    """One Meta-World V3 task (MT1, goal observable) with seed-determined goals and physics."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 80}

    def __init__(self, task: str, image_size: int = 0, render_size: int = 256, physics: float = 0.0):
        import metaworld  # noqa: F401 - registers the Meta-World/* gymnasium ids

        self.task = task
        self.image_size = int(image_size)
        self.render_size = int(render_size)
        self.physics = float(physics)
        self.render_mode = "rgb_array"
        self._env = gym.make(
            "Meta-World/MT1",
            env_name=task,
            seed=GOAL_SET_SEED,
            terminate_on_success=True,
            max_episode_steps=MAX_EPISODE_STEPS,
            disable_env_checker=True,
        )
        self._sim = self._env.unwrapped
        self._tasks = list(self._find_attr("tasks"))
        assert len(self._tasks) == NUM_GOALS, len(self._tasks)
        # Pick the variation ourselves (from the reset seed), never from the wrapper's RNG.
        self._find_wrapper("toggle_sample_tasks_on_reset").toggle_sample_tasks_on_reset(False)
        self.metadata = {**self.metadata, "render_fps": int(self._sim.metadata.get("render_fps", 80))}

        model = self._sim.model
        self._nominal_mass = model.body_mass.copy()
        self._nominal_friction = model.geom_friction.copy()
        self._cameras: dict[int, _Camera] = {}
        self._frames: dict[int, np.ndarray] = {}  # per-step cache: obs image and render() share a frame

        spaces = {
            "state": gym.spaces.Box(-np.inf, np.inf, shape=(39,), dtype=np.float64),
            "task": _text_space(),
        }
        if self.image_size > 0:
            spaces["image"] = gym.spaces.Box(0, 255, shape=(self.image_size, self.image_size, 3), dtype=np.uint8)
        self.observation_space = gym.spaces.Dict(spaces)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self.goal_index: int | None = None

    def _find_attr(self, name: str):
        return getattr(self._find_wrapper(name), name)

    def _find_wrapper(self, name: str):
        env = self._env
        while True:
            if name in vars(env) or name in vars(type(env)):
                return env
            if not hasattr(env, "env"):
                raise AttributeError(f"no Meta-World wrapper has {name!r}")
            env = env.env

    # -- rendering --------------------------------------------------------------------------
    def _frame(self, size: int) -> np.ndarray:
        frame = self._frames.get(size)
        if frame is None:
            camera = self._cameras.get(size)
            if camera is None:
                camera = self._cameras[size] = _Camera(self._sim.model, size)
            frame = self._frames[size] = camera.render(self._sim.data)
        return frame

    def render(self):
        return self._frame(self.render_size).copy()

    # -- physics ----------------------------------------------------------------------------
    def _randomize_physics(self, seed: int | None) -> None:
        import mujoco

        model = self._sim.model
        model.body_mass[:] = self._nominal_mass
        model.geom_friction[:] = self._nominal_friction
        rng = physics_rng(seed)
        s = self.physics
        model.body_mass[:] *= rng.uniform(1.0 - s, 1.0 + s, size=model.nbody)
        model.geom_friction[:] *= rng.uniform(1.0 - s, 1.0 + s, size=(model.ngeom, 1))
        mujoco.mj_setConst(model, self._sim.data)  # derived constants (subtree masses, inverse weights)

    # -- gymnasium API ----------------------------------------------------------------------
    def _obs(self, state) -> dict[str, Any]:
        obs: dict[str, Any] = {"state": np.asarray(state, dtype=np.float64), "task": self.task}
        if self.image_size > 0:
            obs["image"] = self._frame(self.image_size).copy()
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.goal_index = goal_index(seed) if seed is not None else int(self.np_random.integers(NUM_GOALS))
        if self.physics > 0:
            self._randomize_physics(seed if seed is not None else int(self.np_random.integers(2**32)))
        self._sim.set_task(self._tasks[self.goal_index])
        state, info = self._env.reset(seed=seed)
        self._frames.clear()
        return self._obs(state), self._info(info)

    def step(self, action):
        action = np.clip(np.asarray(action, dtype=np.float64).reshape(4), -1.0, 1.0)
        state, reward, terminated, truncated, info = self._env.step(action)
        self._frames.clear()
        return self._obs(state), float(reward), bool(terminated), bool(truncated), self._info(info)

    def _info(self, info: dict) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in info.items():
            if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
                out[key] = float(value)
        out.setdefault("success", 0.0)
        out["goal_index"] = self.goal_index
        return out

    def close(self):
        for camera in self._cameras.values():
            camera.close()
        self._cameras.clear()
        self._env.close()
