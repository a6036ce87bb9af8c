"""Pick and place of ``prebuilt/libero-expert`` (:mod:`evaluations.prebuilt.libero.expert.model`), a **privileged
scripted** policy for LIBERO (not a learned policy); which goal comes next and the articulation / push primitives
are in :mod:`evaluations.prebuilt.libero.expert.goals` and :mod:`evaluations.prebuilt.libero.expert.fixtures`.

**Stateless**: every action is a function of the current privileged state only. The phase is inferred each
step, in this order:

1. the goal predicate to work on (:func:`current_goal`): the first ``on`` / ``in`` predicate not yet met geometrically
   (an object still held for an ``on`` goal is not met yet, nor a held load for an ``in`` goal that reaches
   into its container but is not yet down to its rim: a tall carton; none left → hold still, gripper open);
2. fingers opening (gap growing) → keep opening and rise above the object (after a release or a miss);
3. fingers stopped on something with the object's grasp point between them → **carry**: rise to the carry
   height, move so the object's centre is above the destination, lower, and open at the release height (or
   where the lowering stalls within 5 cm of it: a stretched arm);
4. fingers closing at the grasp point → hold still and keep closing;
5. fingers stopped part-closed on nothing (a miss) → open;
6. otherwise **approach**: rise to the hover height, move above the grasp point, descend, close (into a
   drawer: down 2 cm inside the rim point, out to it in the last 4 cm, clear of the drawer's side wall; over
   an ``in`` goal's container, first up over its rim: :func:`~evaluations.prebuilt.libero.expert.destinations.leave_height`).

Where each object goes (a shared fixture region's slot) and when a load stands on a fixture:
:mod:`evaluations.prebuilt.libero.expert.destinations`.

Action (7 floats in [-1, 1]): ``[:3]`` position delta ``GAIN × (waypoint − eef)``, at least ``MIN_STEP`` outside a
3 mm dead band, clipped (the controller scales 1 to 5 cm); ``[3:6]`` rotation delta toward the gripper pointing
straight down with the grasp's yaw (1 unit = 0.5 rad); ``[6]`` gripper (+1 close, −1 open).

Grasps: a bowl on its rim, 4.5 cm from its centre and 2.7 cm above its origin (a mug, wider than the open fingers,
likewise on its wall: :func:`_rim`), the fingers opening radially —
on the side (±y) with more room among its neighbours, at the pick and, among the articulated fixtures, where
the hand will hold it over the destination (fixtures count as 15 cm discs; gripped on the side toward a cabinet
next to the plate, the hand's body sat on the cabinet's top 10 cm above the release height; a near tie
goes to the side nearer the hand, so the choice does not swap between steps), on the side facing the robot
when the bowl is at the front of the table (x > ``FAR_X``, where a ±y grip leaves the arm stretched), or across
the slide direction when the bowl sits in an open drawer. Anything else from above at its bounding box's
centre (``<object>_aabb``), the fingers across its shorter horizontal side. A carried object clears the tops
of nearby articulated fixtures. This module serves the ``on`` / ``in`` goals :func:`place` is given.
"""

from __future__ import annotations

import numpy as np

from .cabinet_top import on_top, out_from_under
from .destinations import destination, leave_height, resting, whole_drawer
from .goal_text import as_text, parse_goal
from .grasp import grasp_pose, hold_distance, inside_fixture, is_bowl
from .motion import EMPTY_GAP, MOVING, OPEN_GAP, toward, vec
from .rotation import rotation_action, wrap_yaw, yaw_of
from .scene import body_of, clearance_height, container_aabb


#: Hover height above the grasp point before descending (m).
HOVER = 0.10

#: Grasp yaw error (rad) above which the hand holds its height over a part-open drawer (:func:`turning_over_drawer`).
TURN_HIGH = 0.3

#: Hover height (m) over a bowl standing on an articulated fixture's top (:func:`on_top`): the cabinet's top is
#: 22 cm above the table at its far side, and 10 cm over it the arm was stretched out and up (the elbow nearly
#: straight) and stalled 2 cm short of the point above the rim until the step cap.
HOVER_ON_TOP = 0.05

#: Clearance of the carried object's origin above the destination when releasing (m).
RELEASE_CLEARANCE = {"on": 0.045, "in": 0.03}

#: Carry height of the object's origin above the destination's (m).
CARRY = 0.15

#: xy tolerance to start descending onto the grasp point / the release point (m).
XY_TOL = 0.01

RELEASE_XY_TOL = 0.035

#: A descent that stops (hand slower than STALL_SPEED m/s) within STALL_ABOVE m above the grasp point closes there.
STALL_ABOVE = 0.035

STALL_SPEED = 0.005

#: A load lowering for an ``on`` goal that stops (hand slower than STALL_SPEED) within this height above the
#: release point is released there: over a plate at the far side of the table the arm is fully stretched (elbow at its limit)
#: a centimetre above the release height and would otherwise hold the bowl there until the step cap.
RELEASE_STALL_ABOVE = 0.05

#: A bowl in a drawer is approached NUDGE m in from its rim point, moving out to it in the last SLANT m.
NUDGE = 0.02

SLANT = 0.04

#: Distance from the grasp point within which the fingers hold the object (m).
HOLD_TOL = 0.05

#: A goal object counts as placed when its centre is this close (xy, m) to the destination's.
PLACED_XY = 0.05

#: ... and for an ``on`` goal onto an object (a plate, not a region site), this close: LIBERO's ``On`` there
#: (``check_ontop``) takes the two bodies' origins within 3 cm (xy). Counted placed at 4.3 cm, a bowl that slid off
#: the plate's centre after the release was left there until the step cap (libero_goal 8, init state 10).
ON_OBJECT_XY = 0.03

#: A held load for an ``in`` goal whose bottom is more than REACH_IN (m) below its container's top already
#: reaches into the container (a tall carton or bottle): it is lowered until its top is RIM_CLEARANCE (m) above
#: the container's top before it counts as placed (and is let go). Opened 10 cm over the basket's floor, the
#: milk carton hung by its gable roof's eave on one finger pad and rose with the hand, then fell out of reach.
REACH_IN = 0.01

RIM_CLEARANCE = 0.03

def held(priv: dict, obj: str) -> bool:
    """The fingers are stopped part-closed on ``obj`` (the carry phase's test)."""
    qpos, qvel = vec(priv, "gripper_qpos"), vec(priv, "gripper_qvel")
    gap, speed = float(qpos[0] - qpos[1]), float(qvel[0] - qvel[1])
    return EMPTY_GAP < gap < OPEN_GAP and -MOVING < speed <= MOVING and hold_distance(priv, obj) < HOLD_TOL

def placed(priv: dict, predicate: str, obj: str, target: str) -> bool:
    """Geometric stand-in for the BDDL predicate: the object rests near the destination's centre (within
    :data:`PLACED_XY`, or :data:`ON_OBJECT_XY` on top of an object as LIBERO's ``On`` wants).

    An object still held for an ``on`` goal is not placed yet, however close: the 12 cm height window (for
    objects dropped into a basket) otherwise counts a bowl carried 11 cm over the plate as placed, and the
    expert opened there and dropped it onto the plate's rim, where it bounced off or came to rest tilted.
    A held load that reaches into its container (``in``) is not placed either until it is down to the rim
    (:func:`reaches_in`), nor a load held over a drawer region (let go by the carry at its release height).
    """
    p, t = vec(priv, f"{obj}_pos"), destination(priv, obj, target)
    onto_object = predicate == "on" and f"{target}_aabb" in priv and f"{target}_size" not in priv
    near = bool(np.linalg.norm(p[:2] - t[:2]) < (ON_OBJECT_XY if onto_object else PLACED_XY) and -0.05 < p[2] - t[2] < 0.12)
    if not near or not held(priv, obj):
        return near
    if f"{target}_joint" in priv:  # into a drawer: let go at the release height, not 12 cm over the drawer
        return False
    return predicate == "in" and not reaches_in(priv, obj, target)

def reaches_in(priv: dict, obj: str, target: str) -> bool:
    """A held ``obj`` already reaches into ``target``'s container but is still too high to let go: its bottom
    is more than :data:`REACH_IN` below the container's top, its top more than :data:`RIM_CLEARANCE` above it.

    A tall carton is gripped 3.5 cm below its top, just under the eaves of its gable roof; let go with its
    bottom 10 cm over the basket's floor, it hung on one finger pad by an eave and rose with the hand.
    Lowered until the hand is just over the rim, it is set down instead of dropped. Short loads are over the
    rim when they enter the placed window and are dropped as before.
    """
    box = container_aabb(priv, target)
    if box is None or f"{obj}_aabb" not in priv:
        return False
    load, rim = vec(priv, f"{obj}_aabb"), float(box[5])
    return bool(load[2] < rim - REACH_IN and load[5] > rim + RIM_CLEARANCE)

def current_goal(priv: dict, preds: list[list[str]] | None = None) -> tuple[str, str, str] | None:
    """The first ``(predicate, object, destination)`` pick-and-place goal not yet met, or ``None``; among ``preds``
    (default: the whole goal's) while the whole goal still decides where each object goes (a shared region's slot)."""
    for pred in parse_goal(as_text(priv["goal"])) if preds is None else preds:
        if len(pred) != 3 or pred[0] not in ("on", "in"):
            continue
        obj, target = body_of(priv, pred[1]), body_of(priv, pred[2])
        if target is not None and f"{pred[2]}_pos" in priv:
            target = pred[2]
        if obj is None or target is None:
            continue
        if not placed(priv, pred[0], obj, target):
            return pred[0], obj, target
    return None

def _via(eef: np.ndarray, goal_xy: np.ndarray, height: float, final: np.ndarray, tol: float) -> np.ndarray:
    """Waypoint: rise to ``height`` before travelling in xy, travel, then head for ``final``."""
    if np.linalg.norm(eef[:2] - goal_xy) > tol:
        if eef[2] < height - 0.03 and np.linalg.norm(eef[:2] - goal_xy) > 3 * tol:
            return np.array([eef[0], eef[1], height])
        return np.array([goal_xy[0], goal_xy[1], max(height, final[2])])
    return final

def place(priv: dict, goal: tuple[str, str, str] | None) -> np.ndarray:
    """Pick-and-place phases for ``goal`` (``(predicate, object, destination)``; ``None``: hold still, open)."""
    eef, quat = vec(priv, "eef_pos"), vec(priv, "eef_quat")
    qpos, qvel = vec(priv, "gripper_qpos"), vec(priv, "gripper_qvel")
    gap, speed = float(qpos[0] - qpos[1]), float(qvel[0] - qvel[1])
    if goal is None:
        move = toward(eef, eef + np.array([0, 0, 0.02]))
        return np.concatenate([move, rotation_action(quat), [-1.0]]).astype(np.float32)
    predicate, obj, target = goal
    grasp, yaw = grasp_pose(priv, obj, target)
    near = hold_distance(priv, obj)
    hover = grasp[2] + (HOVER_ON_TOP if is_bowl(obj) and on_top(priv, obj) else HOVER)
    rot = rotation_action(quat)
    if speed > MOVING:  # opening: rise clear of the object
        move, grip = toward(eef, np.array([eef[0], eef[1], max(eef[2], hover)])), -1.0
    elif EMPTY_GAP < gap < OPEN_GAP and near < HOLD_TOL and speed > -MOVING:
        move, grip = _carry(priv, eef, predicate, obj, target)
    elif speed < -MOVING and near < HOLD_TOL:  # closing on the grasp point
        move, grip = toward(eef, eef), 1.0
    elif gap < OPEN_GAP:  # stopped part-closed away from the object: a miss
        move, grip = toward(eef, eef), -1.0
    else:
        inward = None
        if is_bowl(obj) and inside_fixture(priv, obj) is not None:  # from the rim point to the bowl's centre
            inward = vec(priv, f"{obj}_pos")[:2] - grasp[:2]
            inward = inward / max(float(np.linalg.norm(inward)), 1e-9)
        move, grip = approach(priv, eef, grasp, hover, inward)
        leave = leave_height(priv, eef, grasp)
        if leave is not None:  # over the container: straight up to its rim's height, then level over it
            low = eef[2] < leave - 0.01
            move = toward(eef, np.array([*(eef[:2] if low else grasp[:2]), max(leave, eef[2] if low else hover)]))
            grip = -1.0
        if turning_over_drawer(priv, target, yaw) and move[2] < 0:  # turn high, then come down
            move = np.array([move[0], move[1], 0.0])
        rot = rotation_action(quat, yaw)
    return np.concatenate([move, rot, [grip]]).astype(np.float32)

def turning_over_drawer(priv: dict, target: str, yaw: float) -> bool:
    """The hand is still turning to grasp yaw ``yaw`` (rad) by more than :data:`TURN_HIGH` while a load goes into
    drawer region ``target`` opened only part way (see ``whole_drawer``): it holds its height meanwhile. Coming down
    while turning, the hand's ends (16 cm apart) swept into the part-open top drawer of libero_goal task 3 and
    pushed it from 0.115 m back to 0.063 m; the bowl then came to rest on the cabinet's top."""
    if target is None or f"{target}_joint" not in priv or whole_drawer(priv, target):
        return False
    return abs(wrap_yaw(yaw_of(vec(priv, "eef_quat")) - yaw)) > TURN_HIGH

def approach(
    priv: dict, eef: np.ndarray, grasp: np.ndarray, hover: float, inward: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Open gripper: hover above the grasp point, descend, close there (or where the descent stalls).

    With ``inward`` (a bowl in a drawer: the xy direction from the rim point to the bowl's centre) the hand
    comes down :data:`NUDGE` further in and moves out to the rim only in the last :data:`SLANT` m: straight
    above the rim point the outer finger lands on the drawer's side wall (the descent stopped 3.8 cm above the
    grasp point until the step cap).
    """
    dxy = float(np.linalg.norm(eef[:2] - grasp[:2]))
    slow = float(np.linalg.norm(vec(priv, "eef_vel"))) < STALL_SPEED
    at_grasp = dxy < XY_TOL and abs(eef[2] - grasp[2]) < 0.01
    reach = 1.5 * XY_TOL if inward is None else NUDGE + 0.5 * XY_TOL
    stalled = dxy < reach and grasp[2] < eef[2] < grasp[2] + STALL_ABOVE and slow
    if inward is None:
        waypoint = _via(eef, grasp[:2], hover, grasp, XY_TOL)
    else:
        offset = NUDGE * float(np.clip((eef[2] - grasp[2]) / SLANT, 0.0, 1.0))
        path_xy = grasp[:2] + offset * inward
        if eef[2] < hover - 0.03 and np.linalg.norm(eef[:2] - path_xy) < 2 * XY_TOL:
            waypoint = np.array([*path_xy, grasp[2]])
        else:
            top = np.array([*(grasp[:2] + NUDGE * inward), grasp[2] + SLANT])
            waypoint = _via(eef, top[:2], hover, top, XY_TOL)
    return toward(eef, waypoint), (1.0 if at_grasp or stalled else -1.0)

def _carry(priv: dict, eef: np.ndarray, predicate: str, obj: str, target: str) -> tuple[np.ndarray, float]:
    """Carry the held object above the destination, lower it, release it (a bowl in a drawer: first out from
    under the cabinet's top, :func:`~evaluations.prebuilt.libero.expert.cabinet_top.out_from_under`)."""
    shift = out_from_under(priv, obj, target) if is_bowl(obj) else None
    if shift is not None:  # out along the slide, rising as much (over the drawer's front panel)
        return toward(eef, eef + np.array([shift[0], shift[1], float(np.linalg.norm(shift))])), 1.0
    obj_pos, dest = vec(priv, f"{obj}_pos"), destination(priv, obj, target)
    offset = obj_pos - eef  # where the object hangs relative to the fingers
    goal_xy = dest[:2] - offset[:2]
    release_z = dest[2] + RELEASE_CLEARANCE[predicate] - offset[2]
    carry_z = max(dest[2] + CARRY, clearance_height(priv, obj)) - offset[2]
    waypoint = _via(eef, goal_xy, carry_z, np.array([goal_xy[0], goal_xy[1], release_z]), RELEASE_XY_TOL)
    over = np.linalg.norm(eef[:2] - goal_xy) < RELEASE_XY_TOL
    stalled = (
        predicate == "on"
        and eef[2] < release_z + RELEASE_STALL_ABOVE
        and float(np.linalg.norm(vec(priv, "eef_vel"))) < STALL_SPEED
    )
    set_down = predicate == "on" and resting(priv, obj, target, dest)
    released = over and (eef[2] < release_z + 0.01 or stalled or set_down)
    return toward(eef, waypoint), (-1.0 if released else 1.0)
