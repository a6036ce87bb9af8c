"""Deliberately misbehaving envs for runtime tests (served by the real local runtime)."""

import os
import time

import gymnasium as gym
import rlmesh


class FaultyCartPole(rlmesh.EnvFactory):
    """CartPole whose server process dies (``crash_seed``) or hangs (``hang_seed``) when reset with that seed."""

    workflow_edition = "2026.06"

    def make(self, crash_seed: int = -1, hang_seed: int = -1):  # type: ignore[override]
        env = gym.make("CartPole-v1")

        class Faulty(gym.Wrapper):
            def reset(self, *, seed=None, options=None):
                if seed == crash_seed:
                    os._exit(3)
                if seed == hang_seed:
                    time.sleep(3600)
                return super().reset(seed=seed, options=options)

        return Faulty(env)


class BrokenAtStart(rlmesh.EnvFactory):
    workflow_edition = "2026.06"

    def make(self):  # type: ignore[override]
        raise RuntimeError("this env cannot be built")
