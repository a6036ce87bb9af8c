"""Which goal ``prebuilt/libero-expert`` works on next, and which primitive serves it.

The BDDL goal (the privileged ``goal`` text) is a conjunction; the expert works on the first predicate not yet
met, taken in this order (stable within a kind): ``open`` and ``turnon`` first, then ``on`` / ``in``, then
``close`` / ``turnoff`` (a drawer is closed after the bowl is in it, whatever the BDDL order). Per predicate:

* ``open`` / ``close`` / ``turnon`` of a drawer region or a knob fixture →
  :mod:`evaluations.prebuilt.libero.expert.fixtures` (met: the joint's signed position, see
  :func:`~evaluations.prebuilt.libero.expert.fixtures.unary_met`);
* ``in <obj> <drawer region>`` with that drawer shut → open the drawer first (out far enough:
  :func:`~evaluations.prebuilt.libero.expert.fixtures.room_for`);
* ``in <obj> <region of a fixture with a door>`` (the microwave) → grip it by its handle, slide it in through the
  opening, push it in; ``close`` of that door → push it shut round its hinge
  (:mod:`evaluations.prebuilt.libero.expert.door`);
* ``on <plate> <table region>`` → push the plate (:func:`~evaluations.prebuilt.libero.expert.fixtures.push`),
  first pushing on past the destination a loose object standing there
  (:func:`~evaluations.prebuilt.libero.expert.fixtures.blocker`);
* other ``on`` / ``in`` → pick and place (:func:`evaluations.prebuilt.libero.expert.place.place`; met geometrically as
  there).

With nothing left: hold still, gripper open. A tilted gripper (after a pull) is first turned back down
(:func:`~evaluations.prebuilt.libero.expert.fixtures.untilt`) unless a drawer is being opened or a knob turned.
"""

from __future__ import annotations

import numpy as np

from . import door
from .destinations import over_container
from .fixtures import close_drawer, door_joint, joint_of, open_drawer, room_for, slide_joint, turn_knob, unary_met, untilt
from .goal_text import as_text, parse_goal
from .grasp import covering, grasp_pose, hold_distance, is_bowl
from .motion import MOVING, toward, vec
from .place import HOLD_TOL, current_goal, held, place
from .push import blocker, push, push_to, pushable, pushed
from .rotation import rotation_action
from .scene import body_of


#: Work order of the predicate kinds (lower first).
ORDER = {"open": 0, "turnon": 0, "on": 1, "in": 1, "close": 2, "turnoff": 2}
#: Before closing a drawer, a hand still within reach of a load it set down (closer than ``HOLD_TOL`` to its grasp,
#: lower than LET_GO_RISE m over its top) opens and, once the fingers are LET_GO_GAP m apart, rises.
LET_GO_RISE = 0.05
LET_GO_GAP = 0.04
#: Fingers closer than LET_GO_HELD (m) and not opening hold nothing (the close pushes with them shut: 1-3 mm;
#: on a bowl's rim they stop 5 mm apart).
LET_GO_HELD = 0.004


def goals(priv: dict) -> list[list[str]]:
    """The goal's predicates (lower case) in work order."""
    preds = [[p[0].lower(), *p[1:]] for p in parse_goal(as_text(priv["goal"])) if p]
    return sorted(preds, key=lambda p: ORDER.get(p[0], 3))


def next_goal(priv: dict) -> tuple | None:
    """The next thing to do: ``("unary", predicate, fixture, joint index)``, ``("push", obj, region)``,
    ``("clear", blocker, table point)`` (a loose object at the push's destination, pushed on past it),
    ``("place", predicate, obj, destination)``, ``("door_in", obj, region)`` (into a region behind a door),
    ``("uncover", neighbour, table point, lowest push height)`` (a neighbour lying across the box to pick, pushed off
    it first), or ``None`` (every predicate the expert knows is met)."""
    for pred in goals(priv):
        if len(pred) == 2:
            met = unary_met(priv, pred[0], pred[1])
            if met is False:
                return ("unary", pred[0], *joint_of(priv, pred[1]))
            continue
        if len(pred) != 3 or pred[0] not in ("on", "in"):
            continue
        if pred[0] == "in" and door.door_of(priv, pred[2]) and f"{pred[1]}_aabb" in priv:
            if not door.inside(priv, pred[1], pred[2]):
                return ("door_in", pred[1], pred[2])
            continue
        joint = joint_of(priv, pred[2])
        if pred[0] == "in" and joint is not None and room_for(priv, pred[2]) is False:
            if f"{pred[1]}_pos" not in priv or current_goal(priv, [pred]) is not None:  # in: being closed on it
                return ("unary", "open", *joint)
        if pred[0] == "on" and pushable(pred[1]) and f"{pred[1]}_pos" in priv and _table_region(priv, pred[2]):
            if not pushed(priv, pred[1], pred[2]):
                clear = blocker(priv, pred[1], pred[2])
                return ("push", pred[1], pred[2]) if clear is None else ("clear", *clear)
            continue
        single = current_goal(priv, [pred])
        if single is not None:
            cover = _covering(priv, single[1])
            return ("place", *single) if cover is None else ("uncover", *cover)
    return None


def _covering(priv: dict, obj: str) -> tuple[str, np.ndarray, float] | None:
    """A neighbour lying across the box ``obj`` under a finger of its grasp, while ``obj`` is not held nor being
    closed on, nor while the hand is over an ``in`` goal's container (a load let go there, the fingers opening:
    :func:`~evaluations.prebuilt.libero.expert.destinations.over_container`) (:func:`~evaluations.prebuilt.libero.expert.grasp.covering`;
    the push's own closed fingers beside the box do not count); bowls and mugs are gripped on the rim."""
    if is_bowl(obj) or f"{obj}_aabb" not in priv or held(priv, obj) or over_container(priv):
        return None
    qvel = vec(priv, "gripper_qvel")
    if float(qvel[0] - qvel[1]) < -MOVING and hold_distance(priv, obj) < HOLD_TOL:
        return None
    grasp, yaw = grasp_pose(priv, obj)
    return covering(priv, obj, grasp, yaw)


def let_go(priv: dict) -> np.ndarray | None:
    """Open and rise off a load just set down (an ``on`` / ``in`` goal's object within ``HOLD_TOL`` of the hand and
    the hand less than :data:`LET_GO_RISE` m over its top), or ``None``. The bowl let go into the bottom drawer
    counted as in it as soon as the fingers moved, and the close (fingers closed) gripped it again and lifted it out
    (libero_10 task 3)."""
    eef, quat, qpos = vec(priv, "eef_pos"), vec(priv, "eef_quat"), vec(priv, "gripper_qpos")
    qvel = vec(priv, "gripper_qvel")
    if float(qpos[0] - qpos[1]) < LET_GO_HELD and float(qvel[0] - qvel[1]) <= MOVING:  # closed on nothing
        return None
    for pred in goals(priv):
        obj = body_of(priv, pred[1]) if len(pred) == 3 and pred[0] in ("on", "in") else None
        if obj is None or f"{obj}_aabb" not in priv or hold_distance(priv, obj) > HOLD_TOL:
            continue
        if eef[2] < vec(priv, f"{obj}_aabb")[5] + LET_GO_RISE:
            rise = 0.05 if float(qpos[0] - qpos[1]) > LET_GO_GAP else 0.0
            move = toward(eef, eef + np.array([0.0, 0.0, rise]))
            return np.concatenate([move, rotation_action(quat), [-1.0]]).astype(np.float32)
    return None


def _table_region(priv: dict, name: str) -> bool:
    """A region site on a table (``main_table_…_region``): somewhere to push to, not an object to stack on."""
    return f"{name}_pos" in priv and f"{name}_size" in priv and "table" in name


def plan(priv: dict) -> np.ndarray:
    """The expert's action (7 floats in [-1, 1]) for one privileged observation."""
    goal = next_goal(priv)
    slide_close = goal is not None and goal[:2] == ("unary", "close") and slide_joint(priv, *goal[2:])
    if (goal is None or goal[:2] not in (("unary", "open"), ("unary", "turnon"))) and not slide_close:
        action = untilt(priv)
        if action is not None:
            return action
    if goal is None:
        return place(priv, None)
    if goal[0] == "push":
        return push(priv, goal[1], goal[2])
    if goal[0] == "clear":
        return push_to(priv, goal[1], goal[2], inside=False)
    if goal[0] == "uncover":
        return push_to(priv, goal[1], goal[2], inside=False, floor=goal[3])
    if goal[0] == "place":
        return place(priv, goal[1:])
    if goal[0] == "door_in":
        return door.put_in(priv, goal[1], goal[2])
    _, predicate, fixture, index = goal
    if slide_close:  # a drawer: let go of the load first
        action = let_go(priv)
        if action is not None:
            return action
    if predicate == "turnon":
        return turn_knob(priv, fixture, index)
    if predicate == "open":
        return open_drawer(priv, fixture, index)
    if predicate == "close" and door_joint(priv, fixture, index):
        return door.close_door(priv, fixture, index)
    if predicate == "close":
        return close_drawer(priv, fixture, index)
    return place(priv, None)
