"""The prebuilt catalog: envs and models every organization may use, served by the ``local`` runtime.

Each entry becomes an ``ImageRepository`` in the ``prebuilt`` namespace with one ``ImageVersion``
whose digest is a content hash of the entry (and of any weight file), so the effective config of an
evaluation pins exactly what ran.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import rlmesh

from .envs import CLASSIC_CRITERIA, CLASSIC_SCENARIOS
from .smolvla import DOCS_PAGE as SMOLVLA_DOCS

#: The endpoint bridge: a model only the /agents API can configure (its ``load`` kwargs are a run's endpoint).
AGENT_ENDPOINT_MODEL = "prebuilt/agent-endpoint"

WEIGHTS_DIR = Path(__file__).with_name("weights")
#: Version label listing the only env repositories a model can act in (comma-separated), checked at submit.
ENVS_LABEL = "dev.rlmesh.platform.envs"

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

    @property
    def labels(self) -> dict:
        return {ENVS_LABEL: ",".join(self.envs)} if self.envs else {}

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        payload = {
            "source": self.source,
            "scenarios": self.scenarios,
            "checkpoints": self.checkpoints,
            **({"envs": list(self.envs)} if self.envs else {}),
            "rlmesh": rlmesh.__version__ if hasattr(rlmesh, "__version__") else "0.1.0",
        }
        h.update(json.dumps(payload, sort_keys=True).encode())
        for path in self.files:
            h.update(path.read_bytes())
        return "sha256:" + h.hexdigest()


def describe_source(source: str) -> dict:
    """The describe envelope (``rlmesh.describe``, schema_version 1) of a trusted ``python://module:Class`` source
    (built in this process) or ``python+<venv>://`` source (built by that venv's interpreter); ``{}`` for other
    sources or when describing fails: the envelope then only lacks what the compatibility check reads."""
    import subprocess

    from ..runtime.base import RuntimeBackendError
    from ..runtime.local import interpreter_for

    try:
        python, target = interpreter_for(source)
    except RuntimeBackendError:
        return {}
    try:
        if python == sys.executable:
            from rlmesh._describe import describe

            # Describing builds the env once; what its libraries print then (gymnasium-robotics' Adroit notice,
            # PyOpenGL's accelerate note) is not the caller's business: migrate and make demo stay quiet.
            with _quiet():
                return json.loads(json.dumps(describe(target)))
        code = "import json, sys; from rlmesh._describe import describe; print(json.dumps(describe(sys.argv[1])))"
        out = subprocess.run([python, "-c", code, target], capture_output=True, text=True, timeout=120,
                             cwd=Path(__file__).resolve().parents[2], check=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    except Exception:  # noqa: BLE001 - an envelope is optional metadata, never a reason to refuse the catalog
        return {}


@contextlib.contextmanager
def _quiet():
    """Python-level stdout, stderr, warnings and INFO logging silenced for the duration."""
    import logging
    import warnings

    previous = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def _classic_scenarios() -> list[dict]:
    return [
        {
            "id": f"classic/{env_id}",
            "name": name,
            "params": {"env_id": env_id},
            "success": CLASSIC_CRITERIA[env_id],
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
    ),
    PrebuiltImage(
        name="gymnasium-robotics",
        kind="env",
        source="python://evaluations.prebuilt.robotics:GoalReaching",
        description="gymnasium-robotics goal reaching: Fetch arm reach, point-mass U-maze; success from the env's flag.",
        scenarios=_goal_scenarios(),
    ),
    PrebuiltImage(
        name="metaworld",
        kind="env",
        source="python+metaworld://evaluations.prebuilt.metaworld:MetaWorld",
        description="Meta-World V3 manipulation (Sawyer arm): MT10, MT50 and ML10 train/test tasks, 500 steps, "
        "success from the env's flag; goals fixed by the episode seed. Runs in its own venv (mujoco 3.3.0).",
        scenarios=_metaworld_scenarios(),
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
        name="smolvla",
        kind="model",
        source="python+lerobot://evaluations.prebuilt.smolvla:SmolVLALibero",
        description="SmolVLA (LeRobot's own policy code, lerobot 0.4.4) fine-tuned on LIBERO: images, state and the "
        "instruction to 50-action chunks. Needs the weights an operator installs (RLMESH_SMOLVLA_LIBERO_DIR, "
        "RLMESH_SMOLVLA_BACKBONE_DIR; docs/running/smolvla-weights.md); CUDA when present, else CPU.",
        # "weights": the checkpoint's folders come from settings (services.weights): refused while not installed.
        checkpoints={"libero": {"load": {}, "weights": {
            "check": "smolvla-libero", "docs": SMOLVLA_DOCS,
            "settings": {"policy_dir": "RLMESH_SMOLVLA_LIBERO_DIR", "backbone_dir": "RLMESH_SMOLVLA_BACKBONE_DIR"}}}},
        envs=("prebuilt/libero",),
    ),
    PrebuiltImage(
        name="miniwob",
        kind="env",
        source="python://evaluations.prebuilt.miniwob:MiniWoB",
        description="MiniWoB++ web tasks in headless Chromium, acted on with tool calls (click, type_text, "
        "press_key, wait, finish); for agents served at an endpoint (the /agents API) and rlmesh models alike.",
        scenarios=_miniwob_scenarios(),
    ),
    PrebuiltImage(
        name="shop",
        kind="env",
        source="python://evaluations.prebuilt.shop:Shop",
        description="An offline web shop (search, product pages, cart, checkout, orders, wish list, account) with "
        "50 user profiles, in headless Chromium with MiniWoB's tools; 120 tasks with state verifiers, and open "
        "runs (a free-text task_definition, judged by request verifiers or a judge endpoint).",
        scenarios=_shop_scenarios(),
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
