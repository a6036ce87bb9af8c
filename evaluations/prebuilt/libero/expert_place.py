"""Pick and place of ``prebuilt/libero-expert`` (:mod:`evaluations.prebuilt.libero.expert`), a **privileged
scripted** policy for LIBERO (not a learned policy); which goal comes next and the articulation / push primitives
are in :mod:`evaluations.prebuilt.libero.expert_goals` and :mod:`evaluations.prebuilt.libero.expert_fixtures`.

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
   an ``in`` goal's container, first up over its rim: :func:`~evaluations.prebuilt.libero.expert_multi.leave_height`).

Where each object goes (a shared fixture region's slot) and when a load stands on a fixture:
:mod:`evaluations.prebuilt.libero.expert_multi`.

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

from . import expert_multi as _multi
from .expert_bddl import _container_aabb, _text, parse_goal
from .expert_grasp import clear_fingers
from . import expert_fixtures as _fx
from .expert_top import on_top as _on_top
from .expert_top import out_from_under
from .expert_fixtures import open_handles
from .expert_scene import FIXTURE_RADIUS, HANDLE_RADIUS, _clearance_height, _fixtures, _neighbours
from .expert_motion import toward as _toward
from .expert_motion import vec as _vec
from .rotation import rotation_action, wrap_yaw, yaw_of

#: Finger gap (m, ``qpos[0] - qpos[1]``) above which the gripper counts as open.
OPEN_GAP = 0.072
#: Finger gap below which the gripper is closed on nothing.
EMPTY_GAP = 0.003
#: Finger gap speed (m/s) above which the fingers are still moving.
MOVING = 0.01
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
#: Hover height above the grasp point before descending (m).
HOVER = 0.10
#: Grasp yaw error (rad) above which the hand holds its height over a part-open drawer (:func:`turning_over_drawer`).
TURN_HIGH = 0.3
#: Hover height (m) over a bowl standing on an articulated fixture's top (:func:`_on_top`): the cabinet's top is
#: 22 cm above the table at its far side, and 10 cm over it the arm was stretched out and up (the elbow nearly
#: straight) and stalled 2 cm short of the point above the rim until the step cap.
HOVER_ON_TOP = 0.05
#: Clearance of the carried object's origin above the destination when releasing (m).
RELEASE_CLEARANCE = {"on": 0.045, "in": 0.03}
#: Carry height of the object's origin above the destination's (m).
CARRY = 0.15
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
#: A bowl going into a drawer pulled all the way out (past ``SLIDE_OPEN``; a drawer opened part way for the bowl,
#: libero_goal 3, keeps the choice below, with which it succeeds): the hand's body reaches HAND_HALF (m) either way along the fingers' opening
#: direction (gripped on the rim away from an open bottom drawer, the hand's end sat on the wine rack's slats 7 cm
#: above the grasp point: libero_10 task 3), and fixtures without joints (a wine rack) count as
#: :data:`FIXTURE_RADIUS` discs too; the rim facing the robot is offered as well.
HAND_HALF = 0.08
#: ... the robot-side rim only for a bowl beyond this x (m): libero_goal 3's bowl, 8 cm nearer the robot than the
#: middle of the table, gripped there left the hand stalled 10 cm over the table beside it until the step cap.
ROBOT_SIDE_X = 0.0



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
    """Gripped on its rim (a bowl) or wall (a mug: wider than the open fingers)."""
    return "bowl" in name or "mug" in name


def _rim(priv: dict, obj: str) -> tuple[float, float]:
    """``(radius, end-effector height above the origin)`` (m) of a rim grasp: a bowl's constants; a mug's wall,
    :data:`MUG_WALL` inside its bounding box's narrower half-side (the handle widens the other), :data:`MUG_DEPTH`
    below its top."""
    if "mug" in obj and f"{obj}_aabb" in priv:
        box, pos = _vec(priv, f"{obj}_aabb"), _vec(priv, f"{obj}_pos")
        return 0.5 * float(min(box[3] - box[0], box[4] - box[1])) - MUG_WALL, float(box[5] - MUG_DEPTH - pos[2])
    return BOWL_RIM, BOWL_GRASP_DZ


def _held(priv: dict, obj: str) -> bool:
    """The fingers are stopped part-closed on ``obj`` (the carry phase's test)."""
    qpos, qvel = _vec(priv, "gripper_qpos"), _vec(priv, "gripper_qvel")
    gap, speed = float(qpos[0] - qpos[1]), float(qvel[0] - qvel[1])
    return EMPTY_GAP < gap < OPEN_GAP and -MOVING < speed <= MOVING and hold_distance(priv, obj) < HOLD_TOL


def _placed(priv: dict, predicate: str, obj: str, target: str) -> bool:
    """Geometric stand-in for the BDDL predicate: the object rests near the destination's centre (within
    :data:`PLACED_XY`, or :data:`ON_OBJECT_XY` on top of an object as LIBERO's ``On`` wants).

    An object still held for an ``on`` goal is not placed yet, however close: the 12 cm height window (for
    objects dropped into a basket) otherwise counts a bowl carried 11 cm over the plate as placed, and the
    expert opened there and dropped it onto the plate's rim, where it bounced off or came to rest tilted.
    A held load that reaches into its container (``in``) is not placed either until it is down to the rim
    (:func:`reaches_in`), nor a load held over a drawer region (let go by the carry at its release height).
    """
    p, t = _vec(priv, f"{obj}_pos"), _multi.destination(priv, obj, target)
    onto_object = predicate == "on" and f"{target}_aabb" in priv and f"{target}_size" not in priv
    near = bool(np.linalg.norm(p[:2] - t[:2]) < (ON_OBJECT_XY if onto_object else PLACED_XY) and -0.05 < p[2] - t[2] < 0.12)
    if not near or not _held(priv, obj):
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
    box = _container_aabb(priv, target)
    if box is None or f"{obj}_aabb" not in priv:
        return False
    load, rim = _vec(priv, f"{obj}_aabb"), float(box[5])
    return bool(load[2] < rim - REACH_IN and load[5] > rim + RIM_CLEARANCE)


def current_goal(priv: dict, preds: list[list[str]] | None = None) -> tuple[str, str, str] | None:
    """The first ``(predicate, object, destination)`` pick-and-place goal not yet met, or ``None``; among ``preds``
    (default: the whole goal's) while the whole goal still decides where each object goes (a shared region's slot)."""
    for pred in parse_goal(_text(priv["goal"])) if preds is None else preds:
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


def _inside_fixture(priv: dict, obj: str) -> np.ndarray | None:
    """xy direction from an articulated fixture (drawer cabinet) out to ``obj`` if ``obj`` sits in it (above its
    base by 0.1 m), unless it stands on a fixture's top (:func:`~evaluations.prebuilt.libero.expert_top.on_top`)."""
    pos = _vec(priv, f"{obj}_pos")
    if _on_top(priv, obj) is not None:
        return None
    for key in priv:
        if not key.endswith("_qpos") or key == "gripper_qpos":
            continue
        fixture = _vec(priv, f"{key[: -len('_qpos')]}_pos")
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
    pos = _vec(priv, f"{obj}_pos")
    if not _is_bowl(obj):
        return _box_grasp(priv, obj)
    slide = _inside_fixture(priv, obj)
    if slide is not None:
        theta = float(np.arctan2(slide[1], slide[0])) + np.pi / 2
        thetas = [theta, theta + np.pi]
    stand = _on_top(priv, obj) if slide is None else None
    if slide is None and (pos[0] > FAR_X or stand is not None):
        thetas = [-np.pi / 2, np.pi / 2, np.pi]
    elif slide is None:
        thetas = [-np.pi / 2, np.pi / 2]
    drawer = slide is None and target is not None and _multi.whole_drawer(priv, target)
    if drawer and pos[0] > ROBOT_SIDE_X and np.pi not in thetas:
        thetas.append(np.pi)
    others = [(n, r) for n, r in _neighbours(priv, obj, stand, rigid=drawer) if np.linalg.norm(n[:2] - pos[:2]) - r < 0.25]

    radius, dz = _rim(priv, obj)

    def point(theta: float) -> np.ndarray:
        return pos + np.array([radius * np.cos(theta), radius * np.sin(theta), dz])

    eef = _vec(priv, "eef_pos")
    dest = _vec(priv, f"{target}_pos") if target is not None and f"{target}_pos" in priv else None
    if drawer:  # where the carry sets it: behind the handle
        dest = _multi.destination(priv, obj, target)
    home = [f for f in _fixtures(priv) if target is not None and target.startswith(f)]  # set down on it: no wall
    walls = [(_vec(priv, f"{f}_pos"), FIXTURE_RADIUS) for f in _fixtures(priv) if f not in home]
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


def _box_grasp(priv: dict, obj: str) -> tuple[np.ndarray, float]:
    """Grasp a non-bowl from above at its bounding box's centre, fingers across its shorter horizontal side (slid
    along the longer side where a neighbour stands under a finger: :mod:`~evaluations.prebuilt.libero.expert_grasp`)."""
    pos = _vec(priv, f"{obj}_pos")
    if f"{obj}_aabb" not in priv:
        return pos + np.array([0.0, 0.0, GRASP_DZ]), 0.0
    box = _vec(priv, f"{obj}_aabb")
    centre, size = (box[:3] + box[3:]) / 2, box[3:] - box[:3]
    z = max(centre[2], box[5] - FINGER_DEPTH)
    yaw = np.pi / 2 if size[1] > 1.15 * size[0] else 0.0
    return clear_fingers(priv, obj, np.array([centre[0], centre[1], z]), yaw), yaw


def hold_distance(priv: dict, obj: str) -> float:
    """Distance (m) from the end effector to where it would hold ``obj`` (a bowl: anywhere on its rim circle)."""
    eef, pos = _vec(priv, "eef_pos"), _vec(priv, f"{obj}_pos")
    rel = eef - pos
    if not _is_bowl(obj):
        grasp, _ = _box_grasp(priv, obj)
        return float(np.linalg.norm(eef - grasp))
    radius, dz = _rim(priv, obj)
    return float(np.hypot(np.linalg.norm(rel[:2]) - radius, rel[2] - dz))


def _via(eef: np.ndarray, goal_xy: np.ndarray, height: float, final: np.ndarray, tol: float) -> np.ndarray:
    """Waypoint: rise to ``height`` before travelling in xy, travel, then head for ``final``."""
    if np.linalg.norm(eef[:2] - goal_xy) > tol:
        if eef[2] < height - 0.03 and np.linalg.norm(eef[:2] - goal_xy) > 3 * tol:
            return np.array([eef[0], eef[1], height])
        return np.array([goal_xy[0], goal_xy[1], max(height, final[2])])
    return final


def place(priv: dict, goal: tuple[str, str, str] | None) -> np.ndarray:
    """Pick-and-place phases for ``goal`` (``(predicate, object, destination)``; ``None``: hold still, open)."""
    eef, quat = _vec(priv, "eef_pos"), _vec(priv, "eef_quat")
    qpos, qvel = _vec(priv, "gripper_qpos"), _vec(priv, "gripper_qvel")
    gap, speed = float(qpos[0] - qpos[1]), float(qvel[0] - qvel[1])
    if goal is None:
        move = _toward(eef, eef + np.array([0, 0, 0.02]))
        return np.concatenate([move, rotation_action(quat), [-1.0]]).astype(np.float32)
    predicate, obj, target = goal
    grasp, yaw = grasp_pose(priv, obj, target)
    near = hold_distance(priv, obj)
    hover = grasp[2] + (HOVER_ON_TOP if _is_bowl(obj) and _on_top(priv, obj) else HOVER)
    rot = rotation_action(quat)
    if speed > MOVING:  # opening: rise clear of the object
        move, grip = _toward(eef, np.array([eef[0], eef[1], max(eef[2], hover)])), -1.0
    elif EMPTY_GAP < gap < OPEN_GAP and near < HOLD_TOL and speed > -MOVING:
        move, grip = _carry(priv, eef, predicate, obj, target)
    elif speed < -MOVING and near < HOLD_TOL:  # closing on the grasp point
        move, grip = _toward(eef, eef), 1.0
    elif gap < OPEN_GAP:  # stopped part-closed away from the object: a miss
        move, grip = _toward(eef, eef), -1.0
    else:
        inward = None
        if _is_bowl(obj) and _inside_fixture(priv, obj) is not None:  # from the rim point to the bowl's centre
            inward = _vec(priv, f"{obj}_pos")[:2] - grasp[:2]
            inward = inward / max(float(np.linalg.norm(inward)), 1e-9)
        move, grip = _approach(priv, eef, grasp, hover, inward)
        leave = _multi.leave_height(priv, eef, grasp)
        if leave is not None:  # over the container: straight up to its rim's height, then level over it
            low = eef[2] < leave - 0.01
            move = _toward(eef, np.array([*(eef[:2] if low else grasp[:2]), max(leave, eef[2] if low else hover)]))
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
    if target is None or f"{target}_joint" not in priv or _multi.whole_drawer(priv, target):
        return False
    return abs(wrap_yaw(yaw_of(_vec(priv, "eef_quat")) - yaw)) > TURN_HIGH


def _approach(
    priv: dict, eef: np.ndarray, grasp: np.ndarray, hover: float, inward: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Open gripper: hover above the grasp point, descend, close there (or where the descent stalls).

    With ``inward`` (a bowl in a drawer: the xy direction from the rim point to the bowl's centre) the hand
    comes down :data:`NUDGE` further in and moves out to the rim only in the last :data:`SLANT` m: straight
    above the rim point the outer finger lands on the drawer's side wall (the descent stopped 3.8 cm above the
    grasp point until the step cap).
    """
    dxy = float(np.linalg.norm(eef[:2] - grasp[:2]))
    slow = float(np.linalg.norm(_vec(priv, "eef_vel"))) < STALL_SPEED
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
    return _toward(eef, waypoint), (1.0 if at_grasp or stalled else -1.0)


def _carry(priv: dict, eef: np.ndarray, predicate: str, obj: str, target: str) -> tuple[np.ndarray, float]:
    """Carry the held object above the destination, lower it, release it (a bowl in a drawer: first out from
    under the cabinet's top, :func:`~evaluations.prebuilt.libero.expert_top.out_from_under`)."""
    shift = out_from_under(priv, obj, target) if _is_bowl(obj) else None
    if shift is not None:  # out along the slide, rising as much (over the drawer's front panel)
        return _toward(eef, eef + np.array([shift[0], shift[1], float(np.linalg.norm(shift))])), 1.0
    obj_pos, dest = _vec(priv, f"{obj}_pos"), _multi.destination(priv, obj, target)
    offset = obj_pos - eef  # where the object hangs relative to the fingers
    goal_xy = dest[:2] - offset[:2]
    release_z = dest[2] + RELEASE_CLEARANCE[predicate] - offset[2]
    carry_z = max(dest[2] + CARRY, _clearance_height(priv, obj)) - offset[2]
    waypoint = _via(eef, goal_xy, carry_z, np.array([goal_xy[0], goal_xy[1], release_z]), RELEASE_XY_TOL)
    over = np.linalg.norm(eef[:2] - goal_xy) < RELEASE_XY_TOL
    stalled = (
        predicate == "on"
        and eef[2] < release_z + RELEASE_STALL_ABOVE
        and float(np.linalg.norm(_vec(priv, "eef_vel"))) < STALL_SPEED
    )
    resting = predicate == "on" and _multi.resting(priv, obj, target, dest)
    released = over and (eef[2] < release_z + 0.01 or stalled or resting)
    return _toward(eef, waypoint), (-1.0 if released else 1.0)
