"""Finger clearance for the top-down box grasp of ``prebuilt/libero-expert`` (:mod:`evaluations.prebuilt.libero.expert.model`).

A box is gripped from above at its bounding box's centre, the fingers across its shorter side. When a
neighbouring object stands where a finger would come down (its bounding box overlaps a finger's footprint and
reaches above the grasp height), the grasp point slides along the box's long side, away from it, just far enough
(at most to :data:`END_MARGIN` m from the box's end); where no spot along it is clear, the centre stays. Met on libero_10 (cream cheese box and milk carton 2 mm
apart): the finger landed on the carton's top and the hand hovered until the step cap.

Where an object is gripped (:func:`grasp_pose`): a bowl or mug on its rim, anything else from above (the rules in
:mod:`evaluations.prebuilt.libero.expert.place`'s docstring), and how far the hand is from that grip.
"""

from __future__ import annotations

import numpy as np

from .cabinet_top import on_top
from .destinations import destination, whole_drawer
from .fixtures import open_handles
from .motion import vec
from .rotation import wrap_yaw
from .scene import FIXTURE_RADIUS, HANDLE_RADIUS, fixtures_of, neighbours


#: A finger's footprint around the end effector, in the gripper frame (m): from PAD_IN to PAD_OUT along the
#: opening direction (open fingers), ±FINGER_HALF_WIDTH across it, plus CLEARANCE all round.
PAD_IN = 0.035
PAD_OUT = 0.06
FINGER_HALF_WIDTH = 0.013
CLEARANCE = 0.005
#: The grasp point stays at least this far (m) from the box's ends.
END_MARGIN = 0.015
#: A neighbour lying across a box is pushed this far (m) beyond touching it, this high (m) over the box's top.
UNCOVER_PAST = 0.03
UNCOVER_DZ = 0.012
#: ... and its near side this far (m) from the box's centre along the fingers' opening: past a finger's outer
#: edge (:data:`PAD_OUT` + :data:`CLEARANCE`) with 1 cm to spare.
UNCOVER_FINGER = PAD_OUT + CLEARANCE + 0.01


def clear_fingers(priv: dict, obj: str, grasp: np.ndarray, yaw: float) -> np.ndarray:
    """``grasp`` slid along the box's long side until no neighbour's bounding box is under a finger.

    ``grasp``: the end-effector grasp point (3, m); ``yaw``: the gripper's yaw (rad; yaw 0 opens the fingers along
    world y). Neighbours are the other objects with an ``_aabb`` whose top is above ``grasp[2] − 0.02``.
    Returns the (possibly unchanged) grasp point.
    """
    opening = np.array([-np.sin(yaw), np.cos(yaw)])
    slide = np.array([opening[1], -opening[0]])
    box = vec(priv, f"{obj}_aabb")
    size = box[3:5] - box[:2]
    reach = max(0.0, 0.5 * float(np.abs(slide) @ size) - END_MARGIN)
    others = [vec(priv, k) for k in priv if k.endswith("_aabb") and k != f"{obj}_aabb"]
    others = [o for o in others if o[5] > grasp[2] - 0.02 and o[2] < grasp[2] + 0.25]
    shift = 0.0
    for other in others:
        shift = finger_shift(grasp[:2] + shift * slide, other, opening, slide, shift)
    shift = float(np.clip(shift, -reach, reach))
    if shift == 0.0 or any(finger_shift(grasp[:2] + shift * slide, o, opening, slide, 0.0) != 0.0 for o in others):
        return grasp  # nothing in the way, or no clear spot along the box (a carton lying across it)
    out = grasp.copy()
    out[:2] = grasp[:2] + shift * slide
    return out


def finger_shift(point: np.ndarray, other: np.ndarray, opening: np.ndarray, slide: np.ndarray, shift: float) -> float:
    """The shift along ``slide`` after moving the fingers at ``point`` clear of the box ``other`` (if they touch)."""
    corners = np.array([[other[0], other[1]], [other[0], other[4]], [other[3], other[1]], [other[3], other[4]]])
    rel = corners - point
    along_open, along_slide = rel @ opening, rel @ slide
    lo_s, hi_s = float(along_slide.min()), float(along_slide.max())
    for side in (-1.0, 1.0):
        lo_o, hi_o = float((side * along_open).min()), float((side * along_open).max())
        if hi_o < PAD_IN - CLEARANCE or lo_o > PAD_OUT + CLEARANCE:
            continue  # not in this finger's band
        width = FINGER_HALF_WIDTH + CLEARANCE
        if hi_s < -width or lo_s > width:
            continue  # beside the finger
        # slide the finger off the neighbour's nearer edge
        shift += (lo_s - width) if (lo_s + hi_s) > 0 else (hi_s + width)
        break
    return shift


def covering(priv: dict, obj: str, grasp: np.ndarray, yaw: float) -> tuple[str, np.ndarray, float] | None:
    """``(neighbour, table point (m) to push it to, lowest push height (m))`` for a neighbour lying across the box
    ``obj`` or lying alongside it (its bottom below the box's top, its top above it; alongside, not taller than it
    is long: a standing carton, pushed at its foot, toppled onto the next box) that is still under a finger at
    ``grasp`` (``yaw`` as in :func:`clear_fingers`, which found no clear spot along the box); ``None`` if there is
    none.

    It is pushed straight away from the box's centre until its near side is :data:`UNCOVER_PAST` beyond the box
    and, along the fingers' opening, :data:`UNCOVER_FINGER` beyond the box's centre (out of the finger's reach),
    the hand :data:`UNCOVER_DZ` over the box's top so it does not land on the box. Met on libero_10 task 1: the
    milk carton, still falling after the settle steps, came to lie across the cream-cheese box, and the finger
    landed on the carton until the step cap; in init states 13, 23, 41 and 42 it came to lie alongside the box
    (0–2 cm from it, along its whole length), and in 34 and 46, pushed off the box only 3 cm, it still lay under
    the finger."""
    opening = np.array([-np.sin(yaw), np.cos(yaw)])
    slide = np.array([opening[1], -opening[0]])
    box = vec(priv, f"{obj}_aabb")
    for key in sorted(priv):
        name = key[: -len("_aabb")] if key.endswith("_aabb") else None
        if name is None or name == obj or f"{name}_pos" not in priv:
            continue
        other = vec(priv, key)
        if other[2] > box[5] or other[5] < box[5] + 0.01:
            continue
        overlaps = bool(np.all(other[:2] < box[3:5]) and np.all(other[3:5] > box[:2]))
        if not overlaps and other[5] - other[2] > max(other[3] - other[0], other[4] - other[1]):
            continue  # standing beside the box, not lying: pushed at its foot it toppled onto the butter
        if finger_shift(grasp[:2], other, opening, slide, 0.0) == 0.0:
            continue
        centre = 0.5 * (box[:2] + box[3:5])
        away = vec(priv, f"{name}_pos")[:2] - centre
        away = away / max(float(np.linalg.norm(away)), 1e-9)
        near = max(0.5 * float(np.abs(away) @ (box[3:5] - box[:2])) + UNCOVER_PAST,
                   UNCOVER_FINGER * abs(float(away @ opening)))
        reach = near + 0.5 * float(np.abs(away) @ (other[3:5] - other[:2]))
        return name, centre + away * reach, float(box[5] + UNCOVER_DZ)
    return None


#: Rim grasp: distance from a bowl's centre along world y, and end-effector height above its origin (m).
BOWL_RIM = 0.045

BOWL_GRASP_DZ = 0.027

#: Mug wall grasp: this far (m) inside the body's radius, this far (m) below its top.
MUG_WALL = 0.006

MUG_DEPTH = 0.03

#: End-effector height above a non-bowl object's origin when grasping (m).
GRASP_DZ = 0.0

#: How far below an object's top the end effector may go when grasping it from above (m).
FINGER_DEPTH = 0.035

#: Per metre of the hand's xy distance from a rim point, that side's score drops by this much (m of clearance):
#: the stateless policy's memory of the side it is heading for. Without it two sides with nearly equal
#: clearance (a bowl in a drawer: both side walls) swapped from one step to the next as the bowl or the drawer
#: moved by a millimetre, and the hand, sent 9 cm back and forth, hovered for 100+ steps.
SIDE_HYSTERESIS = 0.05

#: A bowl beyond this x (m; the robot stands at −x, facing +x) is near the arm's reach: gripped on its ±y rim
#: the elbow is straight (at its joint limit, a singular pose) already at the grasp, and over the plate the hand
#: stalls a few cm off centre. It is gripped on the rim facing the robot instead (θ = 180°), when that side has
#: FAR_SIDE_CLEARANCE (m) from its neighbours; that side's score gets FAR_SIDE_BONUS.
FAR_X = 0.10

FAR_SIDE_CLEARANCE = 0.03

FAR_SIDE_BONUS = 0.2

#: A bowl going into a drawer pulled all the way out (past ``SLIDE_OPEN``; a drawer opened part way for the bowl,
#: libero_goal 3, keeps the choice below, with which it succeeds): the hand's body reaches HAND_HALF (m) either way along the fingers' opening
#: direction (gripped on the rim away from an open bottom drawer, the hand's end sat on the wine rack's slats 7 cm
#: above the grasp point: libero_10 task 3), and fixtures without joints (a wine rack) count as
#: :data:`FIXTURE_RADIUS` discs too; the rim facing the robot is offered as well.
HAND_HALF = 0.08

#: ... the robot-side rim only for a bowl beyond this x (m): libero_goal 3's bowl, 8 cm nearer the robot than the
#: middle of the table, gripped there left the hand stalled 10 cm over the table beside it until the step cap.
ROBOT_SIDE_X = 0.0

def is_bowl(name: str) -> bool:
    """Gripped on its rim (a bowl) or wall (a mug: wider than the open fingers)."""
    return "bowl" in name or "mug" in name

def rim(priv: dict, obj: str) -> tuple[float, float]:
    """``(radius, end-effector height above the origin)`` (m) of a rim grasp: a bowl's constants; a mug's wall,
    :data:`MUG_WALL` inside its bounding box's narrower half-side (the handle widens the other), :data:`MUG_DEPTH`
    below its top."""
    if "mug" in obj and f"{obj}_aabb" in priv:
        box, pos = vec(priv, f"{obj}_aabb"), vec(priv, f"{obj}_pos")
        return 0.5 * float(min(box[3] - box[0], box[4] - box[1])) - MUG_WALL, float(box[5] - MUG_DEPTH - pos[2])
    return BOWL_RIM, BOWL_GRASP_DZ

def inside_fixture(priv: dict, obj: str) -> np.ndarray | None:
    """xy direction from an articulated fixture (drawer cabinet) out to ``obj`` if ``obj`` sits in it (above its
    base by 0.1 m), unless it stands on a fixture's top (:func:`~evaluations.prebuilt.libero.expert.cabinet_top.on_top`)."""
    pos = vec(priv, f"{obj}_pos")
    if on_top(priv, obj) is not None:
        return None
    for key in priv:
        if not key.endswith("_qpos") or key == "gripper_qpos":
            continue
        fixture = vec(priv, f"{key[: -len('_qpos')]}_pos")
        away = pos[:2] - fixture[:2]
        if np.linalg.norm(away) < 0.3 and pos[2] - fixture[2] > 0.1:
            return away / max(float(np.linalg.norm(away)), 1e-9)
    return None

def grasp_pose(priv: dict, obj: str, target: str | None = None) -> tuple[np.ndarray, float]:
    """``(end-effector grasp position, gripper yaw in rad)`` for ``obj``.

    A bowl is gripped on its rim at angle θ around its centre, the fingers opening radially (yaw θ − 90°, the
    default fingers open along world y): θ = ±90° on the side with more room among the neighbours, or across
    a drawer's slide direction when the bowl is in a drawer (its front and back panels leave no room for a
    finger). With ``target`` (the destination's pose key prefix) a side's room is the smaller of its room at the
    pick and its room among the articulated fixtures (but the one ``target`` belongs to) and open drawers' handles
    where the hand will be over ``target`` (see :data:`FIXTURE_RADIUS`). Anything else: straight down on its origin, yaw 0.
    """
    pos = vec(priv, f"{obj}_pos")
    if not is_bowl(obj):
        return box_grasp(priv, obj)
    slide = inside_fixture(priv, obj)
    if slide is not None:
        theta = float(np.arctan2(slide[1], slide[0])) + np.pi / 2
        thetas = [theta, theta + np.pi]
    stand = on_top(priv, obj) if slide is None else None
    if slide is None and (pos[0] > FAR_X or stand is not None):
        thetas = [-np.pi / 2, np.pi / 2, np.pi]
    elif slide is None:
        thetas = [-np.pi / 2, np.pi / 2]
    drawer = slide is None and target is not None and whole_drawer(priv, target)
    if drawer and pos[0] > ROBOT_SIDE_X and np.pi not in thetas:
        thetas.append(np.pi)
    others = [(n, r) for n, r in neighbours(priv, obj, stand, rigid=drawer) if np.linalg.norm(n[:2] - pos[:2]) - r < 0.25]

    radius, dz = rim(priv, obj)

    def point(theta: float) -> np.ndarray:
        return pos + np.array([radius * np.cos(theta), radius * np.sin(theta), dz])

    eef = vec(priv, "eef_pos")
    dest = vec(priv, f"{target}_pos") if target is not None and f"{target}_pos" in priv else None
    if drawer:  # where the carry sets it: behind the handle
        dest = destination(priv, obj, target)
    home = [f for f in fixtures_of(priv) if target is not None and target.startswith(f)]  # set down on it: no wall
    walls = [(vec(priv, f"{f}_pos"), FIXTURE_RADIUS) for f in fixtures_of(priv) if f not in home]
    walls += [(handle, HANDLE_RADIUS) for handle in open_handles(priv)]

    def room(xy: np.ndarray, around: list) -> float:
        return min((float(np.linalg.norm(xy - n[:2])) - r for n, r in around), default=1.0)

    def hand(xy: np.ndarray, theta: float, around: list) -> float:
        """Room of the hand at ``xy``: at its centre, and into a drawer at its two ends too."""
        reach = HAND_HALF * np.array([np.cos(theta), np.sin(theta)])
        return min(room(xy + side * reach, around) for side in ((0, 1, -1) if drawer else (0,)))

    def score(theta: float) -> float:
        clearance = hand(point(theta)[:2], theta, others)
        if dest is not None:  # where the hand will hold it over the destination
            clearance = min(clearance, hand(dest[:2] + point(theta)[:2] - pos[:2], theta, walls))
        near_hand = SIDE_HYSTERESIS * float(np.linalg.norm(point(theta)[:2] - eef[:2]))
        robot_side = FAR_SIDE_BONUS if abs(theta - np.pi) < 1e-9 and clearance > FAR_SIDE_CLEARANCE else 0.0
        return clearance - 0.01 * abs(wrap_yaw(theta - np.pi / 2)) - near_hand + robot_side

    best = max(thetas, key=score)
    return point(best), wrap_yaw(best - np.pi / 2)

def box_grasp(priv: dict, obj: str) -> tuple[np.ndarray, float]:
    """Grasp a non-bowl from above at its bounding box's centre, fingers across its shorter horizontal side (slid
    along the longer side where a neighbour stands under a finger: :mod:`~evaluations.prebuilt.libero.expert.grasp`)."""
    pos = vec(priv, f"{obj}_pos")
    if f"{obj}_aabb" not in priv:
        return pos + np.array([0.0, 0.0, GRASP_DZ]), 0.0
    box = vec(priv, f"{obj}_aabb")
    centre, size = (box[:3] + box[3:]) / 2, box[3:] - box[:3]
    z = max(centre[2], box[5] - FINGER_DEPTH)
    yaw = np.pi / 2 if size[1] > 1.15 * size[0] else 0.0
    return clear_fingers(priv, obj, np.array([centre[0], centre[1], z]), yaw), yaw

def hold_distance(priv: dict, obj: str) -> float:
    """Distance (m) from the end effector to where it would hold ``obj`` (a bowl: anywhere on its rim circle)."""
    eef, pos = vec(priv, "eef_pos"), vec(priv, f"{obj}_pos")
    rel = eef - pos
    if not is_bowl(obj):
        grasp, _ = box_grasp(priv, obj)
        return float(np.linalg.norm(eef - grasp))
    radius, dz = rim(priv, obj)
    return float(np.hypot(np.linalg.norm(rel[:2]) - radius, rel[2] - dz))
