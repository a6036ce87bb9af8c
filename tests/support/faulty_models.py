"""Models with a broken convention, for the first-action check (issue 35): each wraps a working policy and breaks one
thing about its action, as a wrong checkpoint or a wrong conversion does. Served by the real local runtime
(``python://tests.support.faulty_models:<Class>``; the LIBERO ones ``python+libero://``)."""

from __future__ import annotations

import numpy as np
import rlmesh

from evaluations.prebuilt import policies


class _Pendulum(rlmesh.numpy.Model):
    """Pendulum's swing-up controller (``prebuilt/classic-control-heuristics``), its action changed by :meth:`fault`."""

    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER

    def predict(self, observation):
        return self.fault(np.asarray(policies.pendulum_swingup(np.asarray(observation)), dtype=np.float32))

    def fault(self, action: np.ndarray) -> np.ndarray:
        return action


class PendulumTwoDims(_Pendulum):
    """A 2-dim action for Pendulum's (1,) space."""

    def fault(self, action):
        return np.concatenate([action, action])


class PendulumNaN(_Pendulum):
    def fault(self, action):
        return np.full_like(action, np.nan)


class PendulumTimesTen(_Pendulum):
    """Unnormalised: ×10 (Pendulum's torque is in [-2, 2])."""

    def fault(self, action):
        return action * 10.0


class PendulumConstant(_Pendulum):
    """The same action whatever the observation."""

    def fault(self, action):
        return np.full_like(action, 0.5)


class _Expert(rlmesh.numpy.Model):
    """The LIBERO expert (``prebuilt/libero-expert``), its action changed by :meth:`fault`."""

    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER

    def __init__(self):
        super().__init__()
        from evaluations.prebuilt.libero.expert.model import LiberoExpert

        self.expert = LiberoExpert()

    def predict(self, observation):
        return self.fault(np.asarray(self.expert.predict(observation), dtype=np.float32))

    def fault(self, action: np.ndarray) -> np.ndarray:
        return action


class ExpertGripperFlipped(_Expert):
    def fault(self, action):
        action = action.copy()
        action[6] = -action[6]
        return action


class ExpertTimesTen(_Expert):
    def fault(self, action):
        return action * 10.0


class ExpertSixDims(_Expert):
    def fault(self, action):
        return action[:6]
