"""Prebuilt environments served by the ``local`` runtime.

Each class is an :class:`rlmesh.EnvFactory` whose variant catalog is the
scenario list the platform shows (``<benchmark>/<scenario>``). The platform
selects a scenario by starting ``python -m rlmesh.serve --env <this>`` with
the variant's ``params`` as ``--kwargs-json``; one variant per env server.

This file is also baked into the catalog's ``rlmesh-classic-control`` image
(containers/build-images.sh), so what it declares travels with the env: the
success criterion of every scenario (variant metadata ``success``, read by the
platform's probe) and the adapter tags ``rlmesh check-image`` requires.
"""

from __future__ import annotations

import numpy as np
import rlmesh
from rlmesh.adapters import Action, Actuator, EnvTags, StateTag

#: Gymnasium ids of the classic-control scenarios, with their display names.
CLASSIC_SCENARIOS: dict[str, str] = {
    "CartPole-v1": "Cart-pole balancing",
    "MountainCar-v0": "Mountain car",
    "Acrobot-v1": "Acrobot swing-up",
    "Pendulum-v1": "Pendulum swing-up",
    "LunarLander-v3": "Lunar lander",
}

#: What success means on each scenario: none of these envs reports a success flag, so the criterion is declared
#: with the variant (``rlmesh.Variant(..., success=…)``) and judged by the platform (domain.outcomes).
CLASSIC_CRITERIA: dict[str, dict] = {
    "CartPole-v1": {"kind": "survived", "steps": 500, "description": "the pole stayed up until the time limit (500 steps)"},
    "MountainCar-v0": {"kind": "terminated", "description": "the car reached the flag before the time limit"},
    "Acrobot-v1": {"kind": "terminated", "description": "the tip swung above the line before the time limit"},
    "Pendulum-v1": {"kind": "return_at_least", "threshold": -200.0, "description": "episode return ≥ −200"},
    "LunarLander-v3": {"kind": "return_at_least", "threshold": 200.0, "description": "episode return ≥ 200 (solved)"},
}

#: Per-step reward bounds ``[low, high]`` where the env's reward function fixes them (Pendulum: −(θ² + 0.1·θ̇² +
#: 0.001·u²) with |θ| ≤ π, |θ̇| ≤ 8, |u| ≤ 2), recorded as the scenario's ``rewardRange`` so the planner can say how a
#: ``maxSteps`` cap biases a return threshold (planning.horizons).
CLASSIC_REWARD_RANGES: dict[str, tuple[float, float]] = {"Pendulum-v1": (-16.2736044, 0.0)}

#: Observation width and number of discrete actions (None: a continuous Box action) of each scenario.
_SPACES: dict[str, tuple[int, int | None]] = {
    "CartPole-v1": (4, 2), "MountainCar-v0": (2, 3), "Acrobot-v1": (6, 3), "Pendulum-v1": (3, None),
    "LunarLander-v3": (8, 4),
}


def classic_tags(env_id: str) -> EnvTags:
    """The adapter tags of one scenario: its state vector and its one-dimensional action, under ``x/classic/…``
    roles (rlmesh's escape namespace: no curated role describes these systems)."""
    name = env_id.split("-")[0].lower()
    role = "torque" if _SPACES[env_id][1] is None else "action_index"
    return EnvTags(observation=StateTag(f"x/classic/{name}_state"), action=Action(Actuator(f"x/classic/{name}_{role}", dim=1)))


def index_action(env):
    """Wrap a ``Discrete(n)``-action Gymnasium env so its action is a one-dimensional ``Box(-0.5, n - 0.5)`` holding the
    action index, rounded to the nearest index (clipped to ``[0, n - 1]``) at every step.

    rlmesh's EnvTags describe flat Box actions only (a Discrete action cannot be tagged), and the catalog's images must
    carry tags for ``rlmesh check-image`` to admit them. Models that return the integer index are unaffected: rlmesh
    converts it to the Box (a plain ``1`` arrives as ``[1.0]``). A uniform sample of the Box rounds to a uniform
    index, so the random baseline stays uniform.
    """
    import gymnasium as gym

    class IndexAction(gym.ActionWrapper):
        def __init__(self, inner):
            super().__init__(inner)
            self.n = int(inner.action_space.n)
            self.action_space = gym.spaces.Box(-0.5, self.n - 0.5, (1,), np.float32)

        def action(self, action):
            value = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
            return int(np.clip(np.rint(value), 0, self.n - 1))

    return IndexAction(env)


class ClassicControl(rlmesh.EnvFactory):
    """Gymnasium classic-control (and Box2D LunarLander) tasks, one per variant.

    Variant ids are ``classic/<gymnasium id>``; ``make(env_id=…)`` builds the
    env with Gymnasium's own time limit (CartPole 500 steps, MountainCar 200,
    Acrobot 500, Pendulum 200, LunarLander 1000). Discrete actions are published
    as their index (:func:`index_action`) so each scenario can carry adapter tags
    (``tag_params``: the tags follow ``env_id``).
    """

    workflow_edition = "2026.06"
    params = rlmesh.ParamSpec(
        rlmesh.Param(
            "env_id",
            str,
            choices=tuple(CLASSIC_SCENARIOS),
            description="Gymnasium environment id",
            group="task",
        )
    )
    tag_params = ("env_id",)
    tags = classic_tags("CartPole-v1")

    @classmethod
    def tags_for(cls, env_id: str = "CartPole-v1", **_):  # type: ignore[override]
        return classic_tags(env_id)

    def make(self, env_id: str = "CartPole-v1"):  # type: ignore[override]
        import gymnasium as gym

        # rgb_array costs nothing until render() is called (only for recorded episodes).
        env = gym.make(env_id, render_mode="rgb_array")
        return env if _SPACES[env_id][1] is None else index_action(env)

    @classmethod
    def enumerate_variants(cls):
        for env_id, name in CLASSIC_SCENARIOS.items():
            yield rlmesh.Variant(f"classic/{env_id}", {"env_id": env_id}, name=name, success=CLASSIC_CRITERIA[env_id])
