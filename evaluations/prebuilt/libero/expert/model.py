"""``prebuilt/libero-expert``'s model: the rlmesh model the catalog serves
(``python+libero://evaluations.prebuilt.libero.expert.model:LiberoExpert``) and :func:`plan`, its action for one
privileged observation.

Served from ``.venv-libero``::

    .venv-libero/bin/python -m rlmesh.serve evaluations.prebuilt.libero.expert.model:LiberoExpert \\
        --address 127.0.0.1:7310

Action (7 floats in [-1, 1]): ``[:3]`` position delta (the controller scales 1 to 5 cm), ``[3:6]`` rotation
delta (1 unit = 0.5 rad), ``[6]`` gripper (+1 close, −1 open).
"""

from __future__ import annotations

import numpy as np
import rlmesh

from .goals import plan as plan_goals

__all__ = ["LiberoExpert", "plan"]


def plan(priv: dict) -> np.ndarray:
    """The expert's action (7 floats in [-1, 1], float32) for one privileged observation.

    A function of the observation's values, not of its key order: an env server hands the keys sorted (the
    ``gymnasium.spaces.Dict`` order the observation is encoded in) and an in-process env in insertion order, and
    where two candidates tie (the first articulated fixture a bowl stands above, on ``libero_spatial/9``) the order
    decided the grasp. Sorted here, the expert acts on both as it acts through the platform.
    """
    return plan_goals(dict(sorted(priv.items())))


class LiberoExpert(rlmesh.numpy.Model):
    """Privileged scripted expert for LIBERO; reads ``observation["privileged"]``.

    Needs the env made with ``privileged: true``; raises ``KeyError`` naming the key otherwise.
    """

    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER  # reads the raw observation

    def predict(self, observation):
        try:
            priv = observation["privileged"]
        except KeyError:
            raise KeyError("observation has no 'privileged' key: make prebuilt/libero with privileged: true") from None
        return plan(priv)
