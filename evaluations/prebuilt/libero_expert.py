"""``prebuilt/libero-expert``: a **privileged scripted** pick-and-place policy for LIBERO (not a learned policy).

It reads the simulator's ground truth that ``prebuilt/libero`` puts under ``observation["privileged"]`` when
made with ``privileged: true`` (:mod:`evaluations.prebuilt.libero_privileged`: object and region poses,
end effector, gripper, the BDDL goal) and moves the end effector through waypoints with LIBERO's default
OSC_POSE delta controller. It is the baseline a VLA is compared against, and the proof that success on a
task is reachable and measured correctly; a model that sees only images cannot read this state.

Served from ``.venv-libero``::

    .venv-libero/bin/python -m rlmesh.serve evaluations.prebuilt.libero_expert:LiberoExpert \\
        --address 127.0.0.1:7310

**Stateless**: every action is a function of the current privileged state only (one server may serve several
env sessions at once). The phase is inferred each step, in this order:

1. the goal predicate to work on: the first ``on`` / ``in`` predicate of ``goal`` not yet met geometrically
   (none left → hold still, gripper open);
2. fingers opening (gap growing) → keep opening and rise above the object (after a release or a miss);
3. fingers stopped on something with the object's grasp point between them → **carry**: rise to the carry
   height, move so the object's centre is above the destination, lower, and open at the release height;
4. fingers closing at the grasp point → hold still and keep closing;
5. fingers stopped part-closed on nothing (a miss) → open;
6. otherwise **approach**: rise to the hover height, move above the grasp point, descend, close.

Action (7 floats in [-1, 1]): ``[:3]`` position delta = ``clip(GAIN × (waypoint − eef), −1, 1)`` (the
controller scales 1 to 5 cm), ``[3:6]`` rotation delta toward the gripper pointing straight down, ``[6]`` gripper
(+1 close, −1 open). Grasp points: a bowl is gripped on its rim, 4.5 cm from its centre along world y (the axis
the fingers open on), on the side away from its neighbours; anything else straight down on its origin.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import rlmesh

#: Position gain: action units per metre of waypoint error (1 unit = 5 cm of OSC_POSE delta).
GAIN = 12.0
#: Rotation gain: action units per radian of orientation error (1 unit = 0.5 rad).
ROT_GAIN = 1.0
#: Finger gap (m, ``qpos[0] - qpos[1]``) above which the gripper counts as open.
OPEN_GAP = 0.072
#: Finger gap below which the gripper is closed on nothing.
EMPTY_GAP = 0.004
#: Finger gap speed (m/s) above which the fingers are still moving.
MOVING = 0.01
#: Rim grasp: distance from a bowl's centre along world y, and end-effector height above its origin (m).
BOWL_RIM = 0.045
BOWL_GRASP_DZ = 0.027
#: End-effector height above a non-bowl object's origin when grasping (m).
GRASP_DZ = 0.0
#: Hover height above the grasp point before descending (m).
HOVER = 0.10
#: Clearance of the carried object's origin above the destination when releasing (m).
RELEASE_CLEARANCE = {"on": 0.045, "in": 0.03}
#: Carry height of the object's origin above the destination's (m).
CARRY = 0.15
#: xy tolerance to start descending onto the grasp point / the release point (m).
XY_TOL = 0.01
RELEASE_XY_TOL = 0.015
#: Distance from the grasp point within which the fingers hold the object (m).
HOLD_TOL = 0.04
#: A goal object counts as placed when its centre is this close (xy, m) to the destination's.
PLACED_XY = 0.05

#: Gripper pointing straight down, x-axis forward: robosuite's default end-effector orientation (x, y, z, w).
DOWN = np.array([1.0, 0.0, 0.0, 0.0])


def _text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.item() if value.shape == () else value.tolist()
    if isinstance(value, (list, tuple)):
        value = value[0] if value else ""
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_goal(text: str) -> list[list[str]]:
    """``"on a b; in c d"`` → ``[["on", "a", "b"], ["in", "c", "d"]]`` (the privileged ``goal`` text)."""
    return [part.split() for part in str(text).split(";") if part.strip()]


def _vec(priv: dict, key: str) -> np.ndarray:
    return np.asarray(priv[key], dtype=np.float64).reshape(-1)


def _body_of(priv: dict, name: str) -> str | None:
    """The pose key prefix for a BDDL name: the name itself, or the object a ``<obj>_<region>`` belongs to."""
    if f"{name}_pos" in priv:
        return name
    parts = name.split("_")
    for cut in range(len(parts) - 1, 0, -1):
        prefix = "_".join(parts[:cut])
        if f"{prefix}_pos" in priv:
            return prefix
    return None


def _is_bowl(name: str) -> bool:
    return "bowl" in name


def _placed(priv: dict, predicate: str, obj: str, target: str) -> bool:
    """Geometric stand-in for the BDDL predicate: the object rests near the destination's centre."""
    p, t = _vec(priv, f"{obj}_pos"), _vec(priv, f"{target}_pos")
    return bool(np.linalg.norm(p[:2] - t[:2]) < PLACED_XY and -0.05 < p[2] - t[2] < 0.12)


def current_goal(priv: dict) -> tuple[str, str, str] | None:
    """The first ``(predicate, object, destination)`` pick-and-place goal not yet met, or ``None``."""
    for pred in parse_goal(_text(priv["goal"])):
        if len(pred) != 3 or pred[0] not in ("on", "in"):
            continue
        obj, target = _body_of(priv, pred[1]), _body_of(priv, pred[2])
        if target is not None and f"{pred[2]}_pos" in priv:
            target = pred[2]
        if obj is None or target is None:
            continue
        if not _placed(priv, pred[0], obj, target):
            return pred[0], obj, target
    return None


def _neighbours(priv: dict, obj: str) -> list[np.ndarray]:
    names = {k[: -len("_pos")] for k in priv if k.endswith("_pos") and k != "eef_pos"}
    out = []
    for name in names:
        if name == obj or f"{name}_quat" not in priv or "region" in name or name.endswith("_side"):
            continue
        out.append(_vec(priv, f"{name}_pos"))
    return out


def grasp_points(priv: dict, obj: str) -> list[np.ndarray]:
    """Candidate end-effector grasp positions for ``obj``, the preferred first."""
    pos = _vec(priv, f"{obj}_pos")
    if not _is_bowl(obj):
        return [pos + np.array([0.0, 0.0, GRASP_DZ])]
    sides = [pos + np.array([0.0, s * BOWL_RIM, BOWL_GRASP_DZ]) for s in (-1.0, 1.0)]
    others = [n for n in _neighbours(priv, obj) if np.linalg.norm(n[:2] - pos[:2]) < 0.25]

    def clearance(point: np.ndarray) -> float:
        return min((float(np.linalg.norm(point[:2] - n[:2])) for n in others), default=1.0)

    return sorted(sides, key=clearance, reverse=True)


def _rotation_action(quat_xyzw: np.ndarray, target_xyzw: np.ndarray = DOWN) -> np.ndarray:
    """World-frame axis-angle from the current orientation to the target, scaled to action units."""
    from scipy.spatial.transform import Rotation

    err = Rotation.from_quat(target_xyzw) * Rotation.from_quat(quat_xyzw).inv()
    return np.clip(ROT_GAIN * err.as_rotvec() / 0.5, -1.0, 1.0)


def _toward(eef: np.ndarray, waypoint: np.ndarray) -> np.ndarray:
    return np.clip(GAIN * (waypoint - eef), -1.0, 1.0)


def _via(eef: np.ndarray, goal_xy: np.ndarray, height: float, final: np.ndarray, tol: float) -> np.ndarray:
    """Waypoint: rise to ``height`` before travelling in xy, travel, then head for ``final``."""
    if np.linalg.norm(eef[:2] - goal_xy) > tol:
        if eef[2] < height - 0.03 and np.linalg.norm(eef[:2] - goal_xy) > 3 * tol:
            return np.array([eef[0], eef[1], height])
        return np.array([goal_xy[0], goal_xy[1], max(height, final[2])])
    return final


def plan(priv: dict) -> np.ndarray:
    """The expert's action (7 floats in [-1, 1]) for one privileged observation; see the module docstring."""
    eef = _vec(priv, "eef_pos")
    qpos, qvel = _vec(priv, "gripper_qpos"), _vec(priv, "gripper_qvel")
    gap, speed = float(qpos[0] - qpos[1]), float(qvel[0] - qvel[1])
    rot = _rotation_action(_vec(priv, "eef_quat"))
    goal = current_goal(priv)
    if goal is None:
        return np.concatenate([_toward(eef, eef + np.array([0, 0, 0.02])), rot, [-1.0]]).astype(np.float32)
    predicate, obj, target = goal
    points = grasp_points(priv, obj)
    near = min(float(np.linalg.norm(eef - p)) for p in points)
    grasp = points[0]
    hover = grasp[2] + HOVER
    if speed > MOVING:  # opening: rise clear of the object
        move, grip = _toward(eef, np.array([eef[0], eef[1], max(eef[2], hover)])), -1.0
    elif EMPTY_GAP < gap < OPEN_GAP and near < HOLD_TOL and speed > -MOVING:
        move, grip = _carry(priv, eef, predicate, obj, target)
    elif speed < -MOVING and near < HOLD_TOL:  # closing on the grasp point
        move, grip = _toward(eef, eef), 1.0
    elif gap < OPEN_GAP:  # stopped part-closed away from the object: a miss
        move, grip = _toward(eef, eef), -1.0
    else:
        waypoint = _via(eef, grasp[:2], hover, grasp, XY_TOL)
        at_grasp = np.linalg.norm(eef[:2] - grasp[:2]) < XY_TOL and abs(eef[2] - grasp[2]) < 0.01
        move, grip = _toward(eef, waypoint), (1.0 if at_grasp else -1.0)
    return np.concatenate([move, rot, [grip]]).astype(np.float32)


def _carry(priv: dict, eef: np.ndarray, predicate: str, obj: str, target: str) -> tuple[np.ndarray, float]:
    """Carry the held object above the destination, lower it, release it."""
    obj_pos, dest = _vec(priv, f"{obj}_pos"), _vec(priv, f"{target}_pos")
    offset = obj_pos - eef  # where the object hangs relative to the fingers
    goal_xy = dest[:2] - offset[:2]
    release_z = dest[2] + RELEASE_CLEARANCE[predicate] - offset[2]
    carry_z = dest[2] + CARRY - offset[2]
    waypoint = _via(eef, goal_xy, carry_z, np.array([goal_xy[0], goal_xy[1], release_z]), RELEASE_XY_TOL)
    released = np.linalg.norm(eef[:2] - goal_xy) < RELEASE_XY_TOL and eef[2] < release_z + 0.01
    return _toward(eef, waypoint), (-1.0 if released else 1.0)


class LiberoExpert(rlmesh.numpy.Model):
    """Privileged scripted pick-and-place expert for LIBERO; reads ``observation["privileged"]``.

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
