"""Prebuilt Meta-World (V3) env and scripted-expert model, served from their own venv.

Meta-World 3.1.1 pins ``mujoco==3.3.0`` while the main venv has mujoco 4, so the env and the
model run in ``.venv-metaworld`` (``scripts/setup-metaworld.sh``)::

    .venv-metaworld/bin/python -m rlmesh.serve --env evaluations.prebuilt.metaworld:MetaWorld \\
        --address unix:///tmp/mw.sock --kwargs-json '{"benchmark": "mt10", "task": "pick-place-v3"}'
    .venv-metaworld/bin/python -m rlmesh.serve evaluations.prebuilt.metaworld:MetaWorldExpert \\
        --address 127.0.0.1:7300

This module imports neither Django nor the rest of the ``evaluations`` package, and it imports
metaworld / gymnasium / mujoco only inside functions, so the platform (main venv, no metaworld)
can import the catalog constants below: :data:`BENCHMARKS`, :data:`TASK_NAMES`,
:data:`INSTRUCTIONS`, :data:`VARIANTS`.

Episodes are a pure function of the reset seed. Each task has a fixed list of
:data:`NUM_GOALS` goal/object variations (Meta-World's MT1 list generated with benchmark seed
:data:`GOAL_SET_SEED`), and reset seed ``s`` uses variation ``s % 50`` (seeds 0..49 cover every
variation once). Meta-World's own ``RandomTaskSelectWrapper`` draws the variation from an env RNG
that its ``reset(seed=)`` never reseeds, so it depends on how many resets came before; it is
switched off here. With ``physics=s > 0`` every body mass and geom friction is scaled at each
reset by factors drawn uniformly from ``[1 - s, 1 + s]`` with a generator seeded from the reset
seed (the nominal values are restored first).
"""

from __future__ import annotations

import os

import numpy as np
import rlmesh

from .seeds import GOAL_SET_SEED, MAX_EPISODE_STEPS, NUM_GOALS, goal_index, physics_rng  # noqa: F401

__all__ = ["BENCHMARKS", "BENCHMARK_NAMES", "GOAL_SET_SEED", "INSTRUCTIONS", "MAX_EPISODE_STEPS", "NUM_GOALS",
           "TASK_NAMES", "VARIANTS", "MetaWorld", "MetaWorldExpert", "goal_index", "physics_rng"]

# ---------------------------------------------------------------------------------------------
# Catalog constants (no metaworld import; checked against the package by tests/test_metaworld.py)
# ---------------------------------------------------------------------------------------------

#: The 50 V3 tasks (``metaworld.env_dict.ALL_V3_ENVIRONMENTS`` order) → human name.
TASK_NAMES: dict[str, str] = {
    "assembly-v3": "Assembly",
    "basketball-v3": "Basketball",
    "bin-picking-v3": "Bin picking",
    "box-close-v3": "Box close",
    "button-press-topdown-v3": "Button press (top-down)",
    "button-press-topdown-wall-v3": "Button press (top-down, wall)",
    "button-press-v3": "Button press",
    "button-press-wall-v3": "Button press (wall)",
    "coffee-button-v3": "Coffee button",
    "coffee-pull-v3": "Coffee pull",
    "coffee-push-v3": "Coffee push",
    "dial-turn-v3": "Dial turn",
    "disassemble-v3": "Disassemble",
    "door-close-v3": "Door close",
    "door-lock-v3": "Door lock",
    "door-open-v3": "Door open",
    "door-unlock-v3": "Door unlock",
    "hand-insert-v3": "Hand insert",
    "drawer-close-v3": "Drawer close",
    "drawer-open-v3": "Drawer open",
    "faucet-open-v3": "Faucet open",
    "faucet-close-v3": "Faucet close",
    "hammer-v3": "Hammer",
    "handle-press-side-v3": "Handle press (side)",
    "handle-press-v3": "Handle press",
    "handle-pull-side-v3": "Handle pull (side)",
    "handle-pull-v3": "Handle pull",
    "lever-pull-v3": "Lever pull",
    "pick-place-wall-v3": "Pick and place (wall)",
    "pick-out-of-hole-v3": "Pick out of hole",
    "pick-place-v3": "Pick and place",
    "plate-slide-v3": "Plate slide",
    "plate-slide-side-v3": "Plate slide (side)",
    "plate-slide-back-v3": "Plate slide back",
    "plate-slide-back-side-v3": "Plate slide back (side)",
    "peg-insert-side-v3": "Peg insert (side)",
    "peg-unplug-side-v3": "Peg unplug (side)",
    "soccer-v3": "Soccer",
    "stick-push-v3": "Stick push",
    "stick-pull-v3": "Stick pull",
    "push-v3": "Push",
    "push-wall-v3": "Push (wall)",
    "push-back-v3": "Push back",
    "reach-v3": "Reach",
    "reach-wall-v3": "Reach (wall)",
    "shelf-place-v3": "Shelf place",
    "sweep-into-v3": "Sweep into",
    "sweep-v3": "Sweep",
    "window-open-v3": "Window open",
    "window-close-v3": "Window close",
}

#: Task → short instruction (after the Meta-World paper's task descriptions).
INSTRUCTIONS: dict[str, str] = {
    "assembly-v3": "pick up the nut and place it over the peg",
    "basketball-v3": "pick up the ball and dunk it into the basket",
    "bin-picking-v3": "pick up the puck from one bin and place it into the other bin",
    "box-close-v3": "pick up the lid and place it on the box",
    "button-press-topdown-v3": "press the button from the top",
    "button-press-topdown-wall-v3": "reach past the wall and press the button from the top",
    "button-press-v3": "press the button",
    "button-press-wall-v3": "reach past the wall and press the button",
    "coffee-button-v3": "push the button on the coffee machine",
    "coffee-pull-v3": "pull the mug out from under the coffee machine",
    "coffee-push-v3": "push the mug under the coffee machine",
    "dial-turn-v3": "rotate the dial 180 degrees",
    "disassemble-v3": "pick the nut up off the peg",
    "door-close-v3": "close the door",
    "door-lock-v3": "lock the door by rotating the lock clockwise",
    "door-open-v3": "open the door",
    "door-unlock-v3": "unlock the door by rotating the lock counter-clockwise",
    "hand-insert-v3": "insert the gripper into the hole",
    "drawer-close-v3": "push the drawer closed",
    "drawer-open-v3": "pull the drawer open",
    "faucet-open-v3": "rotate the faucet handle counter-clockwise",
    "faucet-close-v3": "rotate the faucet handle clockwise",
    "hammer-v3": "hammer the nail into the wall",
    "handle-press-side-v3": "press the handle down from the side",
    "handle-press-v3": "press the handle down",
    "handle-pull-side-v3": "pull the handle up from the side",
    "handle-pull-v3": "pull the handle up",
    "lever-pull-v3": "pull the lever up 90 degrees",
    "pick-place-wall-v3": "pick up the puck, move it past the wall and place it at the goal",
    "pick-out-of-hole-v3": "pick the puck up out of the hole",
    "pick-place-v3": "pick up the puck and place it at the goal",
    "plate-slide-v3": "slide the plate into the cabinet",
    "plate-slide-side-v3": "slide the plate sideways into the cabinet",
    "plate-slide-back-v3": "slide the plate out of the cabinet",
    "plate-slide-back-side-v3": "slide the plate sideways out of the cabinet",
    "peg-insert-side-v3": "insert the peg sideways into the hole",
    "peg-unplug-side-v3": "unplug the peg sideways",
    "soccer-v3": "kick the ball into the goal",
    "stick-push-v3": "grasp the stick and push the box with it",
    "stick-pull-v3": "grasp the stick and pull the box with it",
    "push-v3": "push the puck to the goal",
    "push-wall-v3": "push the puck past the wall to the goal",
    "push-back-v3": "pull the puck back to the goal",
    "reach-v3": "move the gripper to the goal position",
    "reach-wall-v3": "move the gripper past the wall to the goal position",
    "shelf-place-v3": "pick up the puck and place it onto the shelf",
    "sweep-into-v3": "sweep the puck into the hole",
    "sweep-v3": "sweep the puck off the table",
    "window-open-v3": "push the window open",
    "window-close-v3": "push the window closed",
}

#: Benchmark → task names, as ``metaworld.env_dict`` defines them (MT10_V3, MT50_V3, ML10_V3).
BENCHMARKS: dict[str, tuple[str, ...]] = {
    "mt10": (
        "reach-v3",
        "push-v3",
        "pick-place-v3",
        "door-open-v3",
        "drawer-open-v3",
        "drawer-close-v3",
        "button-press-topdown-v3",
        "peg-insert-side-v3",
        "window-open-v3",
        "window-close-v3",
    ),
    "mt50": tuple(TASK_NAMES),
    "ml10-train": (
        "reach-v3",
        "push-v3",
        "pick-place-v3",
        "door-open-v3",
        "drawer-close-v3",
        "button-press-topdown-v3",
        "peg-insert-side-v3",
        "window-open-v3",
        "sweep-v3",
        "basketball-v3",
    ),
    "ml10-test": ("drawer-open-v3", "door-close-v3", "shelf-place-v3", "sweep-into-v3", "lever-pull-v3"),
}

#: Display names of the benchmarks.
BENCHMARK_NAMES: dict[str, str] = {
    "mt10": "Meta-World MT10",
    "mt50": "Meta-World MT50",
    "ml10-train": "Meta-World ML10 (train tasks)",
    "ml10-test": "Meta-World ML10 (test tasks)",
}

#: Variant id → make params, e.g. ``"mt10/pick-place-v3" → {"benchmark": "mt10", "task": "pick-place-v3"}``.
VARIANTS: dict[str, dict[str, str]] = {
    f"{bench}/{task}": {"benchmark": bench, "task": task} for bench, tasks in BENCHMARKS.items() for task in tasks
}

class MetaWorld(rlmesh.EnvFactory):
    """Meta-World V3 manipulation tasks (Sawyer arm), one task per variant.

    Variant ids are ``<benchmark>/<task>`` with benchmark ``mt10``, ``mt50``, ``ml10-train`` or
    ``ml10-test``. The observation is a dict: ``state`` (39 floats: hand xyz, gripper, two objects'
    position and quaternion, the same 18 values from the previous step, goal xyz), ``task`` (the
    task name, e.g. ``"pick-place-v3"``) and, with ``image_size > 0``, ``image`` (the corner camera,
    upright RGB). Every benchmark uses the goal-observable state. Actions are 4 floats in [-1, 1]
    (hand dx, dy, dz, gripper). Episodes end on success (``info["success"] == 1.0``) or after 500
    steps.
    """

    workflow_edition = "2026.06"
    params = rlmesh.ParamSpec(
        rlmesh.Param(
            "benchmark", str, choices=tuple(BENCHMARKS), description="Meta-World benchmark the task belongs to",
            group="task",
        ),
        rlmesh.Param("task", str, choices=tuple(TASK_NAMES), description="Meta-World V3 task name", group="task"),
        rlmesh.Param(
            "image_size", int,
            description="Side of the corner-camera RGB image added to the observation as 'image' (0: none)",
            group="observation",
        ),
        rlmesh.Param("render_size", int, description="Side of the frames render() returns (videos)", group="render"),
        rlmesh.Param(
            "physics", float,
            description="Physics randomization s: every body mass and geom friction scaled by U[1-s, 1+s] "
            "at each reset, seeded by the reset seed",
            group="perturbation",
        ),
    )

    def make(  # type: ignore[override]
        self,
        benchmark: str = "mt10",
        task: str = "reach-v3",
        image_size: int = 0,
        render_size: int = 128,
        physics: float = 0.0,
    ):
        if benchmark not in BENCHMARKS:
            raise ValueError(f"unknown Meta-World benchmark {benchmark!r} (choices: {', '.join(BENCHMARKS)})")
        if task not in BENCHMARKS[benchmark]:
            raise ValueError(f"{task!r} is not a task of {benchmark}")
        if int(image_size) < 0 or int(render_size) < 1:
            raise ValueError("image_size must be >= 0 and render_size >= 1")
        if not 0.0 <= float(physics) < 1.0:
            raise ValueError("physics must be in [0, 1)")
        os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; read when mujoco is first imported
        from .env import MetaWorldTaskEnv

        return MetaWorldTaskEnv(task, int(image_size), int(render_size), float(physics))

    @classmethod
    def enumerate_variants(cls):
        for variant_id, params in VARIANTS.items():
            task = params["task"]
            yield rlmesh.Variant(variant_id, params, name=TASK_NAMES[task], instruction=INSTRUCTIONS[task],
                                 success={"kind": "env_flag"})


class MetaWorldExpert(rlmesh.numpy.Model):
    """Meta-World's scripted expert policies (``metaworld.policies``) for all 50 V3 tasks.

    Dispatches on the observation's ``task`` text; reads the 39-float ``state`` (goal included).
    """

    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER  # reads the raw observation

    def _expert_for(self, task: str):
        policies = self.__dict__.setdefault("_mw_policies", {})
        policy = policies.get(task)
        if policy is None:
            from metaworld.policies import ENV_POLICY_MAP

            try:
                policy = policies[task] = ENV_POLICY_MAP[task]()
            except KeyError:
                raise ValueError(f"no Meta-World expert for task {task!r}") from None
        return policy

    def predict(self, observation):
        task = observation["task"]
        if isinstance(task, bytes):
            task = task.decode()
        elif isinstance(task, np.ndarray):
            task = task.item()
            task = task.decode() if isinstance(task, bytes) else str(task)
        action = self._expert_for(str(task)).get_action(np.asarray(observation["state"], dtype=np.float64))
        return np.clip(np.asarray(action, dtype=np.float32), -1.0, 1.0)
