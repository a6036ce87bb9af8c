"""Pushing for ``prebuilt/libero-expert``: a plate (flat and wider than the open fingers) along the table to its
destination, a loose object out of its way first, and a neighbour lying across a box off it.
"""

from __future__ import annotations

import numpy as np

from .fixtures import LEAD
from .motion import action, toward, vec
from .rotation import rotation_action, wrap_yaw


#: Push: the object's centre within this distance (m) of the destination's is done; the hand comes down PUSH_INSET
#: (m) inside the object's far edge, PUSH_DZ (m) above its bottom (fingertips 1.3 cm lower: on a plate's floor).
PUSH_TOL = 0.015

PUSH_INSET = 0.03

PUSH_DZ = 0.005

#: A box is pushed with the hand PUSH_GAP (m) off its edge. The plate's destination is clear when no loose object's
#: centre is within the plate's radius + CLEAR_MARGIN (m) of it, its way when none is within the plate's radius +
#: the object's + SIDE_MARGIN (m) of it; a blocker is pushed CLEAR_PAST (m) beyond that (see :func:`blocker`).
PUSH_GAP = 0.015

CLEAR_MARGIN = 0.04

CLEAR_PAST = 0.03

SIDE_MARGIN = 0.015

def pushable(name: str) -> bool:
    """Objects the expert pushes instead of gripping (a plate: flat and wider than the open fingers)."""
    return "plate" in name

def push(priv: dict, obj: str, target: str) -> np.ndarray:
    """Push ``obj`` (a plate) along the table until its centre is at ``target``'s: fingers closed, lowered inside
    its rim on the far side from the destination (:data:`PUSH_INSET` in from its edge), so they push the rim
    from inside. Behind the plate, outside it, there was no room: a cabinet's handles stood 3 cm off its edge."""
    return push_to(priv, obj, vec(priv, f"{target}_pos")[:2], inside=True)

def push_to(priv: dict, obj: str, dest_xy: np.ndarray, inside: bool, floor: float | None = None) -> np.ndarray:
    """Push ``obj`` toward the table point ``dest_xy`` (m): fingers closed, the hand lowered behind its centre on the
    line from ``dest_xy`` through it, :data:`PUSH_INSET` inside its edge (``inside``: a plate's rim) or
    :data:`PUSH_GAP` outside it (a box), then moved toward ``dest_xy``, steering back onto the line. ``floor``: the
    lowest push height (m; over a box the pushed object lies across)."""
    eef, quat = vec(priv, "eef_pos"), vec(priv, "eef_quat")
    pos = vec(priv, f"{obj}_pos")
    box = vec(priv, f"{obj}_aabb") if f"{obj}_aabb" in priv else np.concatenate([pos - 0.05, pos + 0.05])
    v = np.asarray(dest_xy, dtype=np.float64) - pos[:2]
    dist = float(np.linalg.norm(v))
    v = v / max(dist, 1e-9)
    across = np.array([-v[1], v[0]])
    radius = 0.5 * float(np.linalg.norm(v * (box[3:5] - box[:2])))  # the inscribed ellipse's (a round plate's)
    low = box[2] + PUSH_DZ if floor is None else max(box[2] + PUSH_DZ, floor)
    behind = pos[:2] - v * (radius - PUSH_INSET if inside else radius + PUSH_GAP)
    rel = eef[:2] - pos[:2]
    along, lateral = float(rel @ v), float(rel @ across)
    yaw = wrap_yaw(float(np.arctan2(v[1], v[0])))  # fingers across the push: the narrow side leads
    rot = rotation_action(quat, yaw)
    if abs(eef[2] - low) < 0.015 and along < 0.0 and abs(lateral) < 0.03:  # push
        goal_xy = eef[:2] + v * min(dist + 0.005, LEAD) - across * lateral
        return action(toward(eef, np.array([*goal_xy, low])), rot, 1.0)
    if np.linalg.norm(eef[:2] - behind) < 0.01 or (np.linalg.norm(eef[:2] - behind) < 0.03 and eef[2] < box[5] + 0.05):
        return action(toward(eef, np.array([*behind, low])), rot, 1.0)
    high = max(eef[2], box[5] + 0.06)
    return action(toward(eef, np.array([*behind, high])), rot, 1.0)

def blocker(priv: dict, obj: str, target: str) -> tuple[str, np.ndarray] | None:
    """``(object, table point (m) to push it to)`` for a loose object standing on the table in ``obj``'s way (a
    plate's) to ``target``: its centre within the plate's radius + :data:`CLEAR_MARGIN` of the destination, or
    within the plate's radius + its own + :data:`SIDE_MARGIN` of the plate's way there. One near the destination is pushed on past it along the plate's way; one beside
    the way is pushed sideways off it; each until :data:`CLEAR_PAST` m beyond that reach (the distance counted
    while the hand is down beside it, so the push is not dropped a millimetre past the line). ``None``: the way is
    clear. Shoved by the plate's rim instead, the cream cheese at the destination and the bowl beside the way
    slid sideways into the stove's front and jammed the plate 6 cm short (libero_goal 5)."""
    pos, dest, eef = vec(priv, f"{obj}_pos"), vec(priv, f"{target}_pos"), vec(priv, "eef_pos")
    box = vec(priv, f"{obj}_aabb") if f"{obj}_aabb" in priv else np.concatenate([pos - 0.05, pos + 0.05])
    reach = 0.5 * float(max(box[3] - box[0], box[4] - box[1])) + CLEAR_MARGIN
    v = dest[:2] - pos[:2]
    length = float(np.linalg.norm(v))
    v = v / max(length, 1e-9)
    across = np.array([-v[1], v[0]])
    for key in sorted(priv):
        name = key[: -len("_aabb")] if key.endswith("_aabb") else None
        if name is None or name == obj or "region" in name or f"{name}_qpos" in priv or f"{name}_pos" not in priv:
            continue
        other = vec(priv, key)
        if other[2] > box[5] - 0.005:  # resting on something (the plate itself), not on the table
            continue
        centre, size = vec(priv, f"{name}_pos")[:2], 0.5 * float(max(other[3] - other[0], other[4] - other[1]))
        pushing = eef[2] < other[5] and float(np.linalg.norm(eef[:2] - centre)) < size + 0.04
        far = reach + (CLEAR_PAST if pushing else 0.0)
        rel = centre - pos[:2]
        along, side = float(rel @ v), float(rel @ across)
        if float(np.linalg.norm(centre - dest[:2])) < far:  # at the destination: on past it
            return name, dest[:2] + v * (reach + 2 * CLEAR_PAST)
        beside = reach - CLEAR_MARGIN + SIDE_MARGIN + size + (CLEAR_PAST if pushing else 0.0)
        if 0.0 < along < length and abs(side) < beside:  # beside the way: off it sideways
            return name, centre + np.sign(side) * across * (beside + 2 * CLEAR_PAST - abs(side))
    return None

def pushed(priv: dict, obj: str, target: str) -> bool:
    """``obj``'s centre is within :data:`PUSH_TOL` m (xy) of ``target``'s."""
    return float(np.linalg.norm(vec(priv, f"{obj}_pos")[:2] - vec(priv, f"{target}_pos")[:2])) < PUSH_TOL
