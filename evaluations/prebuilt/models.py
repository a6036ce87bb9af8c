"""Prebuilt policies served by the ``local`` runtime (``python -m rlmesh.serve <this>:Class``).

They need only ``rlmesh`` and ``numpy``: the controllers and the PPO forward pass live in
:mod:`evaluations.prebuilt.policies`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import rlmesh

from . import policies


class ClassicControlHeuristics(rlmesh.numpy.Model):
    """Hand-written controllers for every classic-control scenario, dispatched on the observation's shape.

    CartPole (4,) → PD; MountainCar (2,) → energy pumping; Acrobot (6,) → torque sign;
    Pendulum (3,) → energy-shaping swing-up; LunarLander (8,) → Gymnasium's heuristic.
    Raises ValueError for any other observation shape.
    """

    workflow_edition = "2026.06"
    #: Reads the raw observation: no adapter, on tagged envs (the catalog's classic control) and untagged ones alike.
    spec = rlmesh.NO_ADAPTER

    _BY_DIM = {
        4: policies.cartpole_pd,
        2: policies.mountaincar_energy,
        6: policies.acrobot_torque,
        3: policies.pendulum_swingup,
        8: policies.lunarlander_heuristic,
    }

    def predict(self, observation):
        obs = np.asarray(observation)
        try:
            controller = self._BY_DIM[obs.shape[-1]]
        except (KeyError, IndexError):
            raise ValueError(f"no heuristic controller for observation shape {obs.shape}") from None
        return controller(obs)


class NumpyMLP(rlmesh.numpy.Model):
    """A PPO actor exported to numpy (see ``training/train_ppo_cartpole.py``); ``load(weights=<name>)`` picks the checkpoint."""

    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER  # reads the raw observation (see ClassicControlHeuristics)

    def load(self, weights: str = "ppo_cartpole_actor.npz", **_: object) -> None:
        path = Path(policies.__file__).with_name("weights") / Path(weights).name
        self.policy = policies.NumpyMLPPolicy(path)

    def predict(self, observation):
        return self.policy(np.asarray(observation, dtype=np.float32))

    def predict_batch(self, observations):
        """Greedy actions of a batch ``(N, obs_dim)`` in one forward pass: int64 ``(N,)``. Row-independent (a matrix
        product per layer), so with ``RLMESH_MODEL_BATCH`` ≥ 1 the platform batches the rows of a host's episodes
        (``prebuilt.fused``); served on its own, rlmesh calls :meth:`predict`."""
        return np.argmax(self.policy.logits(np.asarray(observations, dtype=np.float32)), axis=-1).astype(np.int64)
