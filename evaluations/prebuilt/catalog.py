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

from .envs import CLASSIC_SCENARIOS

WEIGHTS_DIR = Path(__file__).with_name("weights")

#: Success criteria for scenarios whose env reports no success flag (see scoring.episode_success).
CLASSIC_CRITERIA: dict[str, dict] = {
    "CartPole-v1": {"kind": "survived", "description": "the pole stayed up until the time limit (500 steps)"},
    "MountainCar-v0": {"kind": "terminated", "description": "the car reached the flag before the time limit"},
    "Acrobot-v1": {"kind": "terminated", "description": "the tip swung above the line before the time limit"},
    "Pendulum-v1": {"kind": "return_at_least", "threshold": -200.0, "description": "episode return ≥ −200"},
    "LunarLander-v3": {"kind": "return_at_least", "threshold": 200.0, "description": "episode return ≥ 200 (solved)"},
}


@dataclass(frozen=True)
class PrebuiltImage:
    name: str
    kind: str
    source: str
    description: str
    scenarios: list[dict] = field(default_factory=list)
    checkpoints: dict[str, dict] = field(default_factory=dict)
    files: tuple[Path, ...] = ()

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        payload = {
            "source": self.source,
            "scenarios": self.scenarios,
            "checkpoints": self.checkpoints,
            "rlmesh": rlmesh.__version__ if hasattr(rlmesh, "__version__") else "0.1.0",
        }
        h.update(json.dumps(payload, sort_keys=True).encode())
        for path in self.files:
            h.update(path.read_bytes())
        return "sha256:" + h.hexdigest()


def describe_source(source: str) -> dict:
    """The describe envelope (``rlmesh.describe``, schema_version 1) of a ``python://module:Class`` source, built
    in this process; ``{}`` for other sources or when describing fails (the envelope then only lacks the spaces
    used by the compatibility check)."""
    if not source.startswith("python://"):
        return {}
    from rlmesh._describe import describe

    try:
        return json.loads(json.dumps(describe(source.removeprefix("python://"))))
    except Exception:  # noqa: BLE001 - an envelope is optional metadata, never a reason to refuse the catalog
        return {}


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


PREBUILT: tuple[PrebuiltImage, ...] = (
    PrebuiltImage(
        name="classic-control",
        kind="env",
        source="python://evaluations.prebuilt.envs:ClassicControl",
        description="Gymnasium classic control (CartPole, MountainCar, Acrobot, Pendulum) and Box2D LunarLander.",
        scenarios=_classic_scenarios(),
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
