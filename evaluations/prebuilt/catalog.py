"""The prebuilt catalog: envs and models every organization may use, served by the ``local`` runtime.

Each entry becomes an ``ImageRepository`` in the ``prebuilt`` namespace with one ``ImageVersion``
whose digest is a content hash of the entry (and of any weight file), so the effective config of an
evaluation pins exactly what ran.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import rlmesh

from ..domain.outcomes import STEP_BOUND
from .describing import describe_source  # noqa: F401 - services.image_versions describes through the catalog
from .envs import CLASSIC_CRITERIA, CLASSIC_REWARD_RANGES, CLASSIC_SCENARIOS
from .libero import ENV_MEMORY_BYTES as LIBERO_ENV_BYTES
from .lerobot.smolvla import DOCS_PAGE as SMOLVLA_DOCS, SMOLVLA_SOURCE

#: The endpoint bridge: a model only the /agents API can configure (its ``load`` kwargs are a run's endpoint).
AGENT_ENDPOINT_MODEL = "prebuilt/agent-endpoint"
#: The openpi bridge: a model only a ``/v1`` model entry's ``endpoint`` configures (a policy server's URL).
OPENPI_ENDPOINT_MODEL = "prebuilt/openpi-endpoint"

WEIGHTS_DIR = Path(__file__).with_name("weights")
#: Version label listing the only env repositories a model can act in (comma-separated), checked at submit.
ENVS_LABEL = "dev.rlmesh.platform.envs"

#: Version label of a model that says what it reads of an observation (comma-separated: ``state``, ``images``,
#: ``privileged``); the planner renders only the cameras such a model reads (``planning.rendering``). A model without
#: it (or a pushed image, which cannot set it) is assumed to read images.
OBSERVES_LABEL = "dev.rlmesh.platform.observes"
#: Version label of an env: the resident memory one instance holds (bytes), from which the planner caps how many run
#: at once on a worker host.
MEMORY_LABEL = "dev.rlmesh.platform.env-memory-bytes"
#: Version label: seconds the image's server may take to become ready, when more than the runtime's default.
READY_LABEL = "dev.rlmesh.platform.ready-seconds"
#: Version label of an env: its measured pace for the preview's estimate, JSON with any of ``startSeconds`` (server
#: start to ready), ``resetSeconds`` (per episode), ``stepsPerSecond`` (unrendered), ``imageStepsPerSecond`` (with
#: image observations: a make kwarg ``cameras`` other than ``none``) and ``renderSeconds`` (per video frame).
PACE_LABEL = "dev.rlmesh.platform.env-pace"
#: Version label of an env whose episodes are not fixed by (task, seed, model, the model's seed) because they depend
#: on wall-clock timing (a web page's scripts and timers run in real time): value ``timing``. Its episodes' trajectory
#: digests (``domain.trajectory``) are still recorded but marked not comparable (``Episode.digest_comparable``).
TRAJECTORY_LABEL = "dev.rlmesh.platform.trajectory"
#: The one value of ``TRAJECTORY_LABEL``.
TIMING_DEPENDENT = "timing"
#: Version label of an env: JSON ``{"<make parameter>": [low, high]}``, the inclusive range a task's ``params`` may
#: give each numeric parameter (``planning.tasks`` refuses past it, naming the path and the range). Every size
#: parameter of the catalog's envs has one: a frame's side costs its square in the worker's memory on every step.
PARAM_BOUNDS_LABEL = "dev.rlmesh.platform.param-bounds"
#: Version label of an env: JSON ``{"index": i, "open": ±1}``, the action component that drives its gripper and that
#: component's sign when open; its episodes start with the gripper open (LIBERO's demonstrations do). The first-action
#: check (``domain.conventions``) warns when a model closes it from the first step on most init states.
GRIPPER_LABEL = "dev.rlmesh.platform.gripper"
#: The largest side of a rendered frame or image observation the catalog's envs accept (pixels): 1024² RGB is 3 MiB
#: a frame, 1.5 GiB over Meta-World's 500 steps, which the recording cap (RLMESH_RECORD_MAX_BYTES) already stops.
MAX_FRAME_SIDE = 1024
PACE_KEYS = ("startSeconds", "resetSeconds", "stepsPerSecond", "imageStepsPerSecond", "renderSeconds")

#: What success means on the scenarios whose env reports its own flag: the flag (declared, so the preview knows).
ENV_FLAG = {"kind": "env_flag", "description": "the env's own success flag"}


@dataclass(frozen=True)
class PrebuiltImage:
    name: str
    kind: str
    source: str
    description: str
    scenarios: list[dict] = field(default_factory=list)
    checkpoints: dict[str, dict] = field(default_factory=dict)
    files: tuple[Path, ...] = ()
    #: For a model that can act only in some envs (it parses their observation): those env repositories.
    envs: tuple[str, ...] = ()
    #: For a model: what it reads of the observation (``OBSERVES_LABEL``); empty: not declared (images assumed).
    observes: tuple[str, ...] = ()
    #: For an env: resident memory of one instance in bytes (``MEMORY_LABEL``); 0: not declared.
    memory_bytes: int = 0
    #: Seconds its server may take to become ready (``READY_LABEL``); 0: the runtime's default.
    ready_seconds: int = 0
    #: For an env: its measured pace (``PACE_LABEL``); empty: the settings' estimates.
    pace: dict = field(default_factory=dict)
    #: For an env: ``TIMING_DEPENDENT`` when its trajectories depend on wall-clock timing (``TRAJECTORY_LABEL``).
    trajectory: str = ""
    #: For an env: the inclusive range of each numeric make parameter a task may set (``PARAM_BOUNDS_LABEL``).
    param_bounds: dict = field(default_factory=dict)
    #: For an env: its gripper's action component and open sign (``GRIPPER_LABEL``); empty: none declared.
    gripper: dict = field(default_factory=dict)

    @property
    def labels(self) -> dict:
        labels = {ENVS_LABEL: ",".join(self.envs)} if self.envs else {}
        if self.observes:
            labels[OBSERVES_LABEL] = ",".join(self.observes)
        if self.memory_bytes:
            labels[MEMORY_LABEL] = str(self.memory_bytes)
        if self.ready_seconds:
            labels[READY_LABEL] = str(self.ready_seconds)
        if self.pace:
            labels[PACE_LABEL] = json.dumps(self.pace, sort_keys=True)
        if self.trajectory:
            labels[TRAJECTORY_LABEL] = self.trajectory
        if self.param_bounds:
            labels[PARAM_BOUNDS_LABEL] = json.dumps(self.param_bounds, sort_keys=True)
        if self.gripper:
            labels[GRIPPER_LABEL] = json.dumps(self.gripper, sort_keys=True)
        return labels

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        payload = {
            "source": self.source,
            "scenarios": self.scenarios,
            "checkpoints": self.checkpoints,
            **({"envs": list(self.envs)} if self.envs else {}),
            **({"labels": self.labels} if self.labels.keys() - {ENVS_LABEL} else {}),
            "rlmesh": rlmesh.__version__ if hasattr(rlmesh, "__version__") else "0.1.0",
        }
        h.update(json.dumps(payload, sort_keys=True).encode())
        for path in self.files:
            h.update(path.read_bytes())
        return "sha256:" + h.hexdigest()


def ready_timeout(version) -> float | None:
    """The readiness time an image version declares (``READY_LABEL``, seconds), or None."""
    try:
        return float((version.labels or {}).get(READY_LABEL) or 0) or None
    except (TypeError, ValueError):
        return None


def declared_memory(version) -> int:
    """The resident bytes one instance of an env version declares (``MEMORY_LABEL``); 0 when it declares none."""
    try:
        return max(0, int((version.labels or {}).get(MEMORY_LABEL) or 0))
    except (TypeError, ValueError):
        return 0


def model_memory(spec, version) -> int:
    """The resident bytes a model server of ``spec`` (a ``runtime.ServerSpec``) on ``version`` holds: a LeRobot
    checkpoint's estimate (``lerobot.checkpoints.resident_bytes`` of the folder its load kwargs name: ``root/folder``,
    ``RLMESH_LEROBOT_CHECKPOINTS/folder`` or SmolVLA's ``policy_dir``), else what the version declares
    (``MEMORY_LABEL``); 0 when neither says."""
    if spec.source.startswith("python+lerobot://"):
        from django.conf import settings

        from .lerobot.checkpoints import resident_bytes

        kw = spec.kwargs
        folder = kw.get("policy_dir") or (
            Path(kw.get("root") or settings.RLMESH_LEROBOT_CHECKPOINTS or ".") / kw["folder"] if kw.get("folder") else None)
        return resident_bytes(folder) if folder else 0
    return declared_memory(version) if version is not None else 0


def trajectory_comparable(version) -> bool:
    """Whether episodes of an env version can be compared by trajectory digest: False when it declares
    ``TRAJECTORY_LABEL: timing`` (its trajectories depend on wall-clock timing), True otherwise (no version: True)."""
    labels = (version.labels or {}) if version is not None else {}
    return str(labels.get(TRAJECTORY_LABEL, "")).strip().lower() != TIMING_DEPENDENT


def declared_bounds(version) -> dict[str, tuple[float, float]]:
    """The numeric make parameters' ranges an env version declares (``PARAM_BOUNDS_LABEL``): name → (low, high),
    inclusive; {} when it declares none or the label is unreadable."""
    try:
        raw = json.loads((version.labels or {}).get(PARAM_BOUNDS_LABEL) or "{}")
    except (TypeError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    bounds = {}
    for name, pair in raw.items():
        if (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in pair)):
            bounds[str(name)] = (pair[0], pair[1])
    return bounds


def declared_gripper(version) -> dict | None:
    """An env version's declared gripper (``GRIPPER_LABEL``): ``{"index": int, "open": ±1}``, or None."""
    try:
        raw = json.loads((version.labels or {}).get(GRIPPER_LABEL) or "null") if version is not None else None
    except (TypeError, ValueError):
        return None
    if isinstance(raw, dict) and isinstance(raw.get("index"), int) and raw.get("open") in (-1, 1):
        return {"index": raw["index"], "open": raw["open"]}
    return None


def declared_pace(version) -> dict[str, float]:
    """The pace an env version declares (``PACE_LABEL``): the known keys with a positive number; {} when none."""
    try:
        raw = json.loads((version.labels or {}).get(PACE_LABEL) or "{}")
    except (TypeError, ValueError):
        return {}
    pace = {}
    for key in PACE_KEYS:
        try:
            value = float(raw.get(key)) if isinstance(raw, dict) and raw.get(key) is not None else 0.0
        except (TypeError, ValueError):
            continue
        if value > 0:
            pace[key] = value
    return pace


def _classic_scenarios() -> list[dict]:
    return [
        {
            "id": f"classic/{env_id}",
            "name": name,
            "params": {"env_id": env_id},
            "success": CLASSIC_CRITERIA[env_id],
            **({"rewardRange": list(CLASSIC_REWARD_RANGES[env_id])} if env_id in CLASSIC_REWARD_RANGES else {}),
        }
        for env_id, name in CLASSIC_SCENARIOS.items()
    ]


def _locomotion_scenarios() -> list[dict]:
    from .robotics import LOCOMOTION, LOCOMOTION_CRITERIA

    return [
        {"id": f"locomotion/{env_id}", "name": name, "params": {"env_id": env_id}, "success": LOCOMOTION_CRITERIA[env_id]}
        for env_id, name in LOCOMOTION.items()
    ]


def _goal_scenarios() -> list[dict]:
    from .robotics import GOAL_REACHING

    # Success is the env's own flag (is_success / success).
    return [{"id": f"{group}/{env_id}", "name": name, "params": {"env_id": env_id}, "success": ENV_FLAG}
            for env_id, (group, name) in GOAL_REACHING.items()]


def _metaworld_scenarios() -> list[dict]:
    from .metaworld import INSTRUCTIONS, TASK_NAMES, VARIANTS

    # Success is Meta-World's own info["success"] flag (the episode terminates on success).
    return [
        {"id": vid, "name": f"{TASK_NAMES[params['task']]} ({params['benchmark'].upper()})", "params": params,
         "instruction": INSTRUCTIONS[params["task"]], "success": ENV_FLAG}
        for vid, params in VARIANTS.items()
    ]


def _libero_scenarios() -> list[dict]:
    from .libero import MAX_STEPS, SUITES, VARIANTS, scenario_name, supported_perturbations

    # Success is the task's BDDL goal (check_success), reported as info["success"]; the episode terminates on it.
    return [
        {"id": vid, "name": scenario_name(vid), "params": params,
         "instruction": SUITES[params["suite"]][params["task_index"]], "maxSteps": MAX_STEPS[params["suite"]],
         "perturbations": supported_perturbations(params["suite"]), "success": ENV_FLAG}
        for vid, params in VARIANTS.items()
    ]


def _miniwob_scenarios() -> list[dict]:
    from .miniwob import SCENARIOS, VARIANTS

    # Success is the page's own check (info["is_success"]: raw reward 1). ``tools`` marks a task for agents: the
    # seed-004 API lists and runs exactly the envs whose scenarios declare them.
    return [
        {"id": sid, "name": f"MiniWoB {e['task']}", "params": dict(VARIANTS[sid]), "instruction": e["example_goal"],
         "description": e["description"], "tools": list(e["tools"]), "maxSteps": e["max_steps"], "success": ENV_FLAG}
        for sid, e in SCENARIOS.items()
    ]


def _shop_scenarios() -> list[dict]:
    from .shop import scenarios

    # Success is all of the task's state checks passing (info["is_success"]); ``shop.open`` is the open-run task
    # (``open`` marks it: listed by no catalog, run only through POST /agents/runs/open).
    return scenarios()


PREBUILT: tuple[PrebuiltImage, ...] = (
    PrebuiltImage(
        name="classic-control",
        kind="env",
        source="python://evaluations.prebuilt.envs:ClassicControl",
        description="Gymnasium classic control (CartPole, MountainCar, Acrobot, Pendulum) and Box2D LunarLander.",
        scenarios=_classic_scenarios(),
    ),
    PrebuiltImage(
        name="mujoco",
        kind="env",
        source="python://evaluations.prebuilt.robotics:MuJoCoLocomotion",
        description="Gymnasium MuJoCo v5 locomotion: HalfCheetah, Hopper, Walker2d, Ant (1000 steps; physics "
        "randomization via the physics perturbation).",
        scenarios=_locomotion_scenarios(),
        param_bounds={"render_size": [16, MAX_FRAME_SIDE]},
    ),
    PrebuiltImage(
        name="gymnasium-robotics",
        kind="env",
        source="python://evaluations.prebuilt.robotics:GoalReaching",
        description="gymnasium-robotics goal reaching: Fetch arm reach, point-mass U-maze; success from the env's flag.",
        scenarios=_goal_scenarios(),
        param_bounds={"render_size": [16, MAX_FRAME_SIDE]},
    ),
    PrebuiltImage(
        name="metaworld",
        kind="env",
        source="python+metaworld://evaluations.prebuilt.metaworld:MetaWorld",
        description="Meta-World V3 manipulation (Sawyer arm): MT10, MT50 and ML10 train/test tasks, 500 steps, "
        "success from the env's flag; goals fixed by the episode seed. Runs in its own venv (mujoco 3.3.0).",
        scenarios=_metaworld_scenarios(),
        param_bounds={"image_size": [0, MAX_FRAME_SIDE], "render_size": [16, MAX_FRAME_SIDE]},
    ),
    PrebuiltImage(
        name="metaworld-expert",
        kind="model",
        source="python+metaworld://evaluations.prebuilt.metaworld:MetaWorldExpert",
        description="Meta-World's scripted expert policies, one model for all 50 tasks (dispatches on the task "
        "named in the observation); ~98% success.",
        envs=("prebuilt/metaworld",),
    ),
    PrebuiltImage(
        name="libero",
        kind="env",
        source="python+libero://evaluations.prebuilt.libero:Libero",
        description="LIBERO manipulation (Franka Panda, LIBERO-PRO packaging): 130 tasks in 5 suites "
        "(libero_spatial, libero_object, libero_goal, libero_10, libero_90), LeRobot's observations, init states "
        "and step caps; success from the BDDL goal; LIBERO-PRO perturbations. Runs in its own venv (MuJoCo 3.17).",
        scenarios=_libero_scenarios(),
        memory_bytes=LIBERO_ENV_BYTES,
        # measured on 2 cores (issues 18, 26; bench/bench_libero.py), slow ends: a first server 5.3 s (a forked one
        # 0.12 s), reset + init state 0.37 s (the kept scene; a rebuild 2.0–4.3 s), 95–145 steps/s unrendered,
        # 3.2–9.1 with both cameras, ~0.15 s per agentview video frame
        pace={"startSeconds": 5.0, "resetSeconds": 0.4, "stepsPerSecond": 95.0, "imageStepsPerSecond": 3.2,
              "renderSeconds": 0.15},
        # make builds the robosuite scene before the server listens: 2–5 s idle, minutes on a loaded host
        ready_seconds=300,
        # OSC_POSE delta control: action[6] drives the gripper, −1 open (LIBERO's demonstrations start open)
        gripper={"index": 6, "open": -1},
    ),
    PrebuiltImage(
        name="libero-expert",
        kind="model",
        source="python+libero://evaluations.prebuilt.libero.expert.model:LiberoExpert",
        description="A scripted pick-and-place expert for LIBERO that reads the simulator's privileged state "
        "(object and fixture poses), not the cameras: privileged, not a learned policy; the reachable baseline "
        "for libero_object and libero_spatial.",
        envs=("prebuilt/libero",),
        observes=("state", "privileged"),
    ),
    PrebuiltImage(
        name="smolvla",
        kind="model",
        source=SMOLVLA_SOURCE,
        description="SmolVLA (LeRobot's own policy code, lerobot 0.4.4) fine-tuned on LIBERO: images, state and the "
        "instruction to 50-action chunks. Needs the weights an operator installs (RLMESH_SMOLVLA_LIBERO_DIR, "
        "RLMESH_SMOLVLA_BACKBONE_DIR; docs/running/smolvla-weights.md); CUDA when present, else CPU.",
        # "weights": the checkpoint's folders come from settings (services.weights): refused while not installed.
        checkpoints={"libero": {"load": {}, "weights": {
            "check": "smolvla-libero", "docs": SMOLVLA_DOCS,
            "settings": {"policy_dir": "RLMESH_SMOLVLA_LIBERO_DIR", "backbone_dir": "RLMESH_SMOLVLA_BACKBONE_DIR"}}}},
        envs=("prebuilt/libero",),
        observes=("state", "images"),
        # importing torch + lerobot and loading the checkpoint: tens of seconds idle, minutes on a loaded host
        ready_seconds=300,
    ),
    PrebuiltImage(
        name="miniwob",
        kind="env",
        source="python://evaluations.prebuilt.miniwob:MiniWoB",
        description="MiniWoB++ web tasks in headless Chromium, acted on with tool calls (click, type_text, "
        "press_key, wait, finish); for agents served at an endpoint (the /agents API) and rlmesh models alike.",
        scenarios=_miniwob_scenarios(),
        # the page's scripts and timers run in real time: the same actions at other moments can see another page
        trajectory=TIMING_DEPENDENT,
        param_bounds={"max_steps": [0, STEP_BOUND], "page_timer_ms": [0, 3_600_000]},
    ),
    PrebuiltImage(
        name="shop",
        kind="env",
        source="python://evaluations.prebuilt.shop:Shop",
        description="An offline web shop (search, product pages, cart, checkout, orders, wish list, account) with "
        "50 user profiles, in headless Chromium with MiniWoB's tools; 120 tasks with state verifiers, and open "
        "runs (a free-text task_definition, judged by request verifiers or a judge endpoint).",
        scenarios=_shop_scenarios(),
        trajectory=TIMING_DEPENDENT,  # a web page in Chromium, as MiniWoB
        param_bounds={"max_steps": [0, STEP_BOUND], "seed": [0, 2**31 - 1]},
    ),
    PrebuiltImage(
        name="openpi-endpoint",
        kind="model",
        source="python://evaluations.prebuilt.openpi.policy:OpenPIPolicy",
        description="A policy served by its owner in openpi's websocket protocol (serve_policy.py: π0, π0.5), bridged "
        "to rlmesh: LIBERO's cameras and state mapped as openpi's LIBERO example maps them, each reply's action chunk "
        "replayed; configured by a model entry's endpoint.",
        envs=("prebuilt/libero",),
        observes=("state", "images"),
    ),
    PrebuiltImage(
        name="agent-endpoint",
        kind="model",
        source="python://evaluations.agents.bridge:EndpointBridge",
        description="An agent served at its owner's endpoint (OpenAI-compatible chat, the HTTP agent protocol or "
        "an rlmesh model server), bridged to rlmesh; configured by each /agents run.",
    ),
    PrebuiltImage(
        name="random",
        kind="model",
        source="builtin:random",
        description="Uniform random actions from the env's action space, seeded by the episode seed (baseline).",
        observes=("state",),
    ),
    PrebuiltImage(
        name="classic-control-heuristics",
        kind="model",
        source="python://evaluations.prebuilt.models:ClassicControlHeuristics",
        description="Hand-written controllers: CartPole PD, MountainCar energy pumping, Acrobot torque sign, "
        "Pendulum energy-shaping swing-up, Gymnasium's LunarLander heuristic.",
    ),
    PrebuiltImage(
        name="ppo",
        kind="model",
        source="python://evaluations.prebuilt.models:NumpyMLP",
        description="PPO policies trained by this project (stable-baselines3), served as numpy MLPs.",
        # "load" is passed to the model's load(); "scenarios" lists the only tasks the checkpoint can act in
        # (its observation and action shapes), checked before any rollout.
        checkpoints={"cartpole": {"load": {"weights": "ppo_cartpole_actor.npz"}, "scenarios": ["classic/CartPole-v1"]}},
        files=(WEIGHTS_DIR / "ppo_cartpole_actor.npz",),
    ),
)
