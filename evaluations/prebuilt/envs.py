"""Prebuilt environments served by the ``local`` runtime.

Each class is an :class:`rlmesh.EnvFactory` whose variant catalog is the
scenario list the platform shows (``<benchmark>/<scenario>``). The platform
selects a scenario by starting ``python -m rlmesh.serve --env <this>`` with
the variant's ``params`` as ``--kwargs-json``; one variant per env server.
"""

from __future__ import annotations

import rlmesh

#: Gymnasium ids of the classic-control scenarios, with their display names.
CLASSIC_SCENARIOS: dict[str, str] = {
    "CartPole-v1": "Cart-pole balancing",
    "MountainCar-v0": "Mountain car",
    "Acrobot-v1": "Acrobot swing-up",
    "Pendulum-v1": "Pendulum swing-up",
    "LunarLander-v3": "Lunar lander",
}


class ClassicControl(rlmesh.EnvFactory):
    """Gymnasium classic-control (and Box2D LunarLander) tasks, one per variant.

    Variant ids are ``classic/<gymnasium id>``; ``make(env_id=…)`` builds the
    env with Gymnasium's own time limit (CartPole 500 steps, MountainCar 200,
    Acrobot 500, Pendulum 200, LunarLander 1000).
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

    def make(self, env_id: str = "CartPole-v1"):  # type: ignore[override]
        import gymnasium as gym

        # rgb_array costs nothing until render() is called (only for recorded episodes).
        return gym.make(env_id, render_mode="rgb_array")

    @classmethod
    def enumerate_variants(cls):
        for env_id, name in CLASSIC_SCENARIOS.items():
            yield rlmesh.Variant(f"classic/{env_id}", {"env_id": env_id}, name=name)
