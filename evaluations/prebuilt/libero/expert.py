"""``prebuilt/libero-expert``: a **privileged scripted** policy for LIBERO (not a learned policy).

It reads the simulator's ground truth that ``prebuilt/libero`` puts under ``observation["privileged"]`` when
made with ``privileged: true`` (:mod:`evaluations.prebuilt.libero.privileged`: object and region poses, fixture
joints, end effector, gripper, the BDDL goal) and moves the end effector through waypoints with LIBERO's default
OSC_POSE delta controller. It is the baseline a VLA is compared against, and the proof that success on a
task is reachable and measured correctly; a model that sees only images cannot read this state.

Served from ``.venv-libero``::

    .venv-libero/bin/python -m rlmesh.serve evaluations.prebuilt.libero.expert:LiberoExpert \\
        --address 127.0.0.1:7310

**Stateless**: every action is a function of the current privileged state only (one server may serve several
env sessions at once). Which goal predicate comes next and which primitive serves it:
:mod:`evaluations.prebuilt.libero.expert_goals`; pick and place: :mod:`evaluations.prebuilt.libero.expert_place`
(whose names this module re-exports); drawers, knobs, pushing: :mod:`evaluations.prebuilt.libero.expert_fixtures`.

Action (7 floats in [-1, 1]): ``[:3]`` position delta (the controller scales 1 to 5 cm), ``[3:6]`` rotation
delta (1 unit = 0.5 rad), ``[6]`` gripper (+1 close, −1 open).
"""

from __future__ import annotations

import numpy as np
import rlmesh

from .expert_goals import plan as _plan_goals
from .expert_motion import GAIN, MIN_STEP
from .expert_place import (
    BOWL_GRASP_DZ, BOWL_RIM, FAR_X, MUG_DEPTH, MUG_WALL, NUDGE, SLANT, _container_aabb, current_goal, grasp_pose,
    hold_distance, parse_goal, place, reaches_in,
)
from .rotation import rotation_error

#: The pick-and-place names stay importable from here, as before the split.
__all__ = [
    "BOWL_GRASP_DZ", "BOWL_RIM", "FAR_X", "GAIN", "MIN_STEP", "MUG_DEPTH", "MUG_WALL", "NUDGE", "SLANT",
    "LiberoExpert", "_container_aabb",
    "current_goal", "grasp_pose", "hold_distance", "parse_goal", "place", "plan", "reaches_in", "rotation_error",
]


def plan(priv: dict) -> np.ndarray:
    """The expert's action (7 floats in [-1, 1], float32) for one privileged observation.

    A function of the observation's values, not of its key order: an env server hands the keys sorted (the
    ``gymnasium.spaces.Dict`` order the observation is encoded in) and an in-process env in insertion order, and
    where two candidates tie (the first articulated fixture a bowl stands above, on ``libero_spatial/9``) the order
    decided the grasp. Sorted here, the expert acts on both as it acts through the platform.
    """
    return _plan_goals(dict(sorted(priv.items())))


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
