"""What ``prebuilt/smolvla`` hands ``SmolVLAPolicy.select_action`` against what ``lerobot-eval`` hands it for the same
LIBERO observation (issue #27). Runs in ``.venv-lerobot`` (lerobot 0.4.4, torch); no simulator needed.

- **LeRobot's side** (:class:`LeRobotEvalInput`) is built by lerobot's own functions as ``lerobot_eval.eval_main`` and
  ``rollout`` call them: the env's formatting of robosuite's observation (``LiberoEnv._format_raw_obs``), the vector
  env's batch (one sub-env), ``preprocess_observation``, ``add_envs_task``, the env pre-processor of
  ``make_env_pre_post_processors`` (``LiberoProcessorStep``) and the checkpoint's pre-processor as
  ``make_pre_post_processors(policy_cfg, pretrained_path, preprocessor_overrides=...)`` loads it (device and rename
  overrides of ``eval_main``; the tokenizer pointed at the local backbone folder, since the Hub id the checkpoint
  names is unreachable offline — the same files the Hub serves);
- **our side** (:func:`our_select_action_input`) is what ``SmolVLALibero.predict`` passes to ``select_action``,
  recorded by wrapping that method, on the observation ``prebuilt/libero`` builds from the same robosuite
  observation (``LiberoTaskEnv._obs``).

``lerobot.envs.libero`` imports LIBERO at its top; outside the LIBERO venv :func:`lerobot_libero_env_class` gives
it stand-ins for the two names it imports (its ``_format_raw_obs`` uses neither).
"""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace
from typing import Any

import numpy as np

__all__ = ["LeRobotEvalInput", "compare_inputs", "lerobot_libero_env_class", "our_observation",
           "our_select_action_input"]

#: robosuite's camera observation keys as LeRobot's env reads them, and our env's camera names.
LEROBOT_CAMERAS = ["agentview_image", "robot0_eye_in_hand_image"]
OUR_CAMERAS = ("agentview", "robot0_eye_in_hand")


def lerobot_libero_env_class():
    """``lerobot.envs.libero.LiberoEnv``; without LIBERO installed, imported against stand-in ``libero`` modules."""
    try:
        import libero.libero  # noqa: F401
    except ImportError:
        names = {"libero": {}, "libero.libero": {"benchmark": None, "get_libero_path": None},
                 "libero.libero.envs": {"OffScreenRenderEnv": None}}
        for name, attrs in names.items():
            module = sys.modules.setdefault(name, types.ModuleType(name))
            for attr, value in attrs.items():
                setattr(module, attr, value)
    from lerobot.envs.libero import LiberoEnv

    return LiberoEnv


def lerobot_observation(raw: dict, ee_ori_mat: np.ndarray | None = None) -> dict:
    """LeRobot's env observation of robosuite's ``raw`` (``LiberoEnv._format_raw_obs`` with the attributes its
    ``__init__`` sets for lerobot-eval's config: both cameras, ``pixels_agent_pos``), batched as a one-env
    ``SyncVectorEnv`` batches it (a leading axis on every leaf, dtypes kept)."""
    env = object.__new__(lerobot_libero_env_class())
    env.camera_name = list(LEROBOT_CAMERAS)
    env.camera_name_mapping = {"agentview_image": "image", "robot0_eye_in_hand_image": "image2"}
    env.obs_type = "pixels_agent_pos"
    controller = SimpleNamespace(ee_ori_mat=np.eye(3) if ee_ori_mat is None else ee_ori_mat)
    env._env = SimpleNamespace(robots=[SimpleNamespace(controller=controller)])
    return _batched(env._format_raw_obs(raw))


def _batched(tree):
    if isinstance(tree, dict):
        return {k: _batched(v) for k, v in tree.items()}
    return np.stack([np.asarray(tree)])


def our_observation(raw: dict, instruction: str) -> dict:
    """``prebuilt/libero``'s observation of robosuite's ``raw`` (``LiberoTaskEnv._obs``, both cameras)."""
    from evaluations.prebuilt.libero.env import LiberoTaskEnv

    env = SimpleNamespace(cameras=OUR_CAMERAS, instruction=instruction, privileged=False)
    return LiberoTaskEnv._obs(env, raw)


class LeRobotEvalInput:
    """lerobot-eval's observation pipeline for a LIBERO suite and a SmolVLA checkpoint folder (``policy_dir``, its
    backbone files in ``backbone_dir``); :meth:`__call__` maps one batched env observation to the policy's input."""

    def __init__(self, policy_dir: str, backbone_dir: str, suite: str = "libero_goal", device: str = "cpu"):
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.envs.configs import LiberoEnv as LiberoEnvConfig
        from lerobot.envs.factory import make_env_pre_post_processors
        from lerobot.policies.factory import make_pre_post_processors

        policy_cfg = PreTrainedConfig.from_pretrained(policy_dir)
        policy_cfg.pretrained_path = policy_dir
        overrides = {"device_processor": {"device": device}, "rename_observations_processor": {"rename_map": {}},
                     "tokenizer_processor": {"tokenizer_name": str(backbone_dir)}}
        self.preprocessor, _ = make_pre_post_processors(policy_cfg=policy_cfg, pretrained_path=policy_dir,
                                                        preprocessor_overrides=overrides)
        self.env_preprocessor, _ = make_env_pre_post_processors(env_cfg=LiberoEnvConfig(task=suite),
                                                                policy_cfg=policy_cfg)

    def __call__(self, observation: dict, instruction: str) -> dict:
        from lerobot.envs.utils import add_envs_task, preprocess_observation

        vec = SimpleNamespace(envs=[SimpleNamespace(task_description=instruction)],
                              call=lambda name: (instruction,))  # SyncVectorEnv.call of one sub-env
        return self.preprocessor(self.env_preprocessor(add_envs_task(vec, preprocess_observation(observation))))


def our_select_action_input(model, observation: dict, context: dict | None = None) -> dict:
    """The batch ``SmolVLALibero.predict`` hands ``select_action`` for ``observation`` (recorded; the call runs)."""
    seen: list[dict] = []
    original = model.policy.select_action

    def record(batch, *args, **kwargs):
        seen.append(batch)
        return original(batch, *args, **kwargs)

    model.policy.select_action = record
    try:
        model.predict(observation, context or {"episode_id": "parity", "episode_seed": 0, "state": {}})
    finally:
        model.policy.select_action = original
    return seen[0]


def compare_inputs(ours: dict, theirs: dict, exact_state: tuple[int, ...] = (0, 1, 2, 6, 7)) -> dict[str, Any]:
    """Per key of either batch: ``"equal"``, or for ``observation.state`` the largest difference when only the
    axis-angle components (3–5) differ, or ``"differs"`` / ``"missing"``."""
    import torch

    out: dict[str, Any] = {}
    for key in sorted(set(ours) | set(theirs)):
        if key not in ours or key not in theirs:
            out[key] = "missing"
            continue
        a, b = ours[key], theirs[key]
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b):
                out[key] = "equal"
            elif (key == "observation.state" and a.shape == b.shape
                  and torch.equal(a[:, exact_state], b[:, exact_state])):
                out[key] = float((a.double() - b.double()).abs().max())
            else:
                out[key] = "differs"
        else:
            out[key] = "equal" if a == b else "differs"
    return out
