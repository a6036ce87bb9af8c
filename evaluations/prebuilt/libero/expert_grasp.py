"""Finger clearance for the top-down box grasp of ``prebuilt/libero-expert`` (:mod:`evaluations.prebuilt.libero.expert`).

A box is gripped from above at its bounding box's centre, the fingers across its shorter side. When a
neighbouring object stands where a finger would come down (its bounding box overlaps a finger's footprint and
reaches above the grasp height), the grasp point slides along the box's long side, away from it, just far enough
(at most to :data:`END_MARGIN` m from the box's end); where no spot along it is clear, the centre stays. Met on libero_10 (cream cheese box and milk carton 2 mm
apart): the finger landed on the carton's top and the hand hovered until the step cap.
"""

from __future__ import annotations

import numpy as np

from .expert_motion import vec as _vec

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
    box = _vec(priv, f"{obj}_aabb")
    size = box[3:5] - box[:2]
    reach = max(0.0, 0.5 * float(np.abs(slide) @ size) - END_MARGIN)
    others = [_vec(priv, k) for k in priv if k.endswith("_aabb") and k != f"{obj}_aabb"]
    others = [o for o in others if o[5] > grasp[2] - 0.02 and o[2] < grasp[2] + 0.25]
    shift = 0.0
    for other in others:
        shift = _away(grasp[:2] + shift * slide, other, opening, slide, shift)
    shift = float(np.clip(shift, -reach, reach))
    if shift == 0.0 or any(_away(grasp[:2] + shift * slide, o, opening, slide, 0.0) != 0.0 for o in others):
        return grasp  # nothing in the way, or no clear spot along the box (a carton lying across it)
    out = grasp.copy()
    out[:2] = grasp[:2] + shift * slide
    return out


def _away(point: np.ndarray, other: np.ndarray, opening: np.ndarray, slide: np.ndarray, shift: float) -> float:
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
    box = _vec(priv, f"{obj}_aabb")
    for key in sorted(priv):
        name = key[: -len("_aabb")] if key.endswith("_aabb") else None
        if name is None or name == obj or f"{name}_pos" not in priv:
            continue
        other = _vec(priv, key)
        if other[2] > box[5] or other[5] < box[5] + 0.01:
            continue
        overlaps = bool(np.all(other[:2] < box[3:5]) and np.all(other[3:5] > box[:2]))
        if not overlaps and other[5] - other[2] > max(other[3] - other[0], other[4] - other[1]):
            continue  # standing beside the box, not lying: pushed at its foot it toppled onto the butter
        if _away(grasp[:2], other, opening, slide, 0.0) == 0.0:
            continue
        centre = 0.5 * (box[:2] + box[3:5])
        away = _vec(priv, f"{name}_pos")[:2] - centre
        away = away / max(float(np.linalg.norm(away)), 1e-9)
        near = max(0.5 * float(np.abs(away) @ (box[3:5] - box[:2])) + UNCOVER_PAST,
                   UNCOVER_FINGER * abs(float(away @ opening)))
        reach = near + 0.5 * float(np.abs(away) @ (other[3:5] - other[:2]))
        return name, centre + away * reach, float(box[5] + UNCOVER_DZ)
    return None
