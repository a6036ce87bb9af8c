"""Articulation and pushing primitives of ``prebuilt/libero-expert`` (:mod:`evaluations.prebuilt.libero.expert.model`).

Each primitive is a stateless function of the privileged observation (:mod:`evaluations.prebuilt.libero.privileged`)
returning the 7-float action, like the pick-and-place phases:

* **turn a knob on** (``turnon <stove>``): fingers closed, come down behind the end of the knob's bar (it lies
  along the knob's angle) and push it round (:func:`knob_contact`) until LIBERO's ``turn_on`` range
  (qpos ≥ 0.5 rad) is reached;
* **open a drawer** (``open <drawer region>``, or an ``in`` goal into a closed drawer): point the gripper
  horizontally into the cabinet's front (fingers opening vertically), come in along the opening direction, close
  on the handle bar, pull along the opening direction until the slide is :data:`SLIDE_OPEN` m out;
* **close a drawer** (``close <drawer region>``): fingers closed, pointing down, come down in front of the handle
  and push it back in along the closing direction;
* **push an object** (``on <plate> <table region>``: a plate is too flat and wide to grip): fingers closed, come
  down just inside its rim on the line from the destination through its centre, and push it until its centre is
  :data:`PUSH_TOL` m from the region's centre; a loose object standing at the destination is pushed on past it
  first (:func:`blocker`).

Any other phase with the gripper tilted more than :data:`TILT_TOL` rad from pointing down (after pulling a
drawer open) first **backs away** along the gripper's axis, fingers open, until :data:`BACK_OFF` m from every
handle, rises :data:`RISE_OVER` m above it, then turns back to pointing down while rising.
"""

from __future__ import annotations

import numpy as np

from .motion import action, gap_speed, toward, vec
from .rotation import (
    down_with_yaw, horizontal_grip, pointing, quat_mul, rotate_to, rotation_action, rotation_error, tilt, untilted,
)


#: Knob: LIBERO's FlatStove ``turn_on`` is qpos ≥ 0.5 rad; the hand turns this far past the knob's angle.
KNOB_ON = 0.5

#: Knob push: the hand's start in the bar's frame (m along the bar, m across it against the turn), the radius
#: and the lead (rad ahead of the bar) of the point it chases, its height above the knob's anchor (the bar's top is
#: 5 cm above it, its far end's 4 cm; the fingertips reach 1.3 cm below the end effector).
KNOB_START = (0.045, 0.06)

KNOB_RADIUS = 0.045

KNOB_LEAD = 0.9

KNOB_PUSH_DZ = 0.028

#: Knob push orientation: pointing down tilted this much (rad) toward the robot (−x). A knob 25 cm from the
#: robot's base is at the edge of its workspace pointing straight down (the elbow at its limit 1 cm above the push
#: height; the hand then slid off, commanded +x, moving −x); tilted, the wrist is farther out and the arm reaches it.
KNOB_TILT = 0.5

#: A slide counts as open beyond this many metres (LIBERO's cabinets: |qpos| > 0.14), closed below CLOSED (m, signed
#: toward open: LIBERO's ``is_close`` needs the drawer pushed just past 0).
SLIDE_OPEN = 0.14

SLIDE_CLOSED = -0.001

#: An ``in`` goal into a drawer only needs the bowl to fit: the pull stops past SLIDE_IN (m; pulled out to
#: SLIDE_OPEN, a top drawer hung over a bowl beside the cabinet, and the hand coming down on its rim stalled on the
#: drawer 10 cm above it; pulled to 0.10 m, the hand coming down beside the bowl bumped it back to 0.063 m, too little
#: for the bowl, in 16 of 50 init states of libero_goal task 3), and once the hand has let go of the handle (pointing down again) a drawer out more than
#: SLIDE_ROOM stays open enough (the hand reaching for the bowl bumped it back, and reopening it looped).
SLIDE_IN = 0.08

SLIDE_ROOM = 0.05

#: Close: the hand pushes CLOSE_DZ (m) above the handle (the fingertips on the drawer's front): pushing the bottom
#: drawer at the handle's height, the forearm came down on the cabinet's top edge with the drawer 6 cm out.
CLOSE_DZ = 0.01

#: ... and keeps pushing up to CLOSE_PAST (m) past the handle's centre (over the bar, the fingertips press the
#: drawer's front behind it: stopped at 1 cm, the hand rose and came down again every 1.3 cm of push).
CLOSE_PAST = 0.04

#: ... pointing down tilted CLOSE_TILT (rad) into the cabinet, so the wrist stays in front of it: straight down,
#: the forearm met the cabinet's top front edge with the bottom drawer still 7 cm out; tilted 0.3 rad toward the
#: robot, the hand met the cabinet's front with it 3.6 cm out.
CLOSE_TILT = 0.7

#: Distance (m) in front of a handle where the horizontal approach starts, and the lead of a pull / push waypoint.
PRE_GRASP = 0.10

LEAD = 0.06

#: The hand holds a handle when within this distance of it (m).
HANDLE_TOL = 0.03

#: Largest tilt (rad) of the gripper counting as pointing down / as aligned with a target orientation.
TILT_TOL = 0.35

ALIGN_TOL = 0.15

#: After a pull, back away along the gripper axis to this distance (m) from every handle before turning down.
BACK_OFF = 0.09

#: ... then rise to this height (m) above that handle before turning down (turning low, the fingers swept over the
#: open drawer's front and the next approach pushed it half shut).
RISE_OVER = 0.10

#: A vertical-axis joint whose handle is farther than DOOR_MIN_RADIUS (m, xy) from the axis is a door's hinge (a
#: stove knob's bar is 5 cm long); LIBERO's microwave counts as closed from qpos > −0.005 rad (its
#: ``default_close_ranges``): signed toward open, below DOOR_CLOSED (rad).
DOOR_MIN_RADIUS = 0.1

DOOR_CLOSED = 0.004

def joint_of(priv: dict, name: str) -> tuple[str, int] | None:
    """``(fixture, joint index)`` a BDDL name articulates: a drawer region's joint, or a fixture's first joint."""
    if f"{name}_joint" in priv:
        index = int(vec(priv, f"{name}_joint")[0])
        for key in priv:
            if key.endswith("_handle") and name.startswith(key[: -len("_handle")]):
                return key[: -len("_handle")], index
    if f"{name}_handle" in priv:
        return name, 0
    return None

def signed_qpos(priv: dict, fixture: str, index: int) -> float:
    """The joint's position, positive toward open / on (``qpos × <fixture>_open``)."""
    return float(vec(priv, f"{fixture}_qpos")[index] * vec(priv, f"{fixture}_open")[index])

def part(priv: dict, fixture: str, index: int, key: str) -> np.ndarray:
    return vec(priv, f"{fixture}_{key}")[3 * index : 3 * index + 3]

def open_direction(priv: dict, fixture: str, index: int) -> np.ndarray:
    """World direction a slide's handle moves when opening (``open × axis``)."""
    return part(priv, fixture, index, "axis") * float(vec(priv, f"{fixture}_open")[index])

def open_handles(priv: dict) -> list[np.ndarray]:
    """Handle positions of every slide (drawer) pulled out more than 2 cm."""
    out = []
    for key in priv:
        fixture = key[: -len("_handle")] if key.endswith("_handle") else None
        if fixture is None or f"{fixture}_qpos" not in priv:
            continue
        for index in range(len(vec(priv, f"{fixture}_qpos"))):
            if signed_qpos(priv, fixture, index) > 0.02 and abs(part(priv, fixture, index, "axis")[2]) < 0.5:
                out.append(part(priv, fixture, index, "handle"))
    return out

def unary_met(priv: dict, predicate: str, name: str) -> bool | None:
    """Whether ``open`` / ``close`` / ``turnon`` / ``turnoff`` of ``name`` holds (``None``: not an articulation)."""
    joint = joint_of(priv, name)
    if joint is None or predicate not in ("open", "close", "turnon", "turnoff"):
        return None
    q = signed_qpos(priv, *joint)
    if predicate == "close" and door_joint(priv, *joint):  # a hinge: LIBERO's microwave is shut from −0.005 rad
        return q < DOOR_CLOSED
    return {"open": q > SLIDE_OPEN, "close": q < SLIDE_CLOSED, "turnon": q >= KNOB_ON + 0.05,
            "turnoff": q < 0.0}[predicate]

def door_joint(priv: dict, fixture: str, index: int = 0) -> bool:
    """Whether joint ``index`` of ``fixture`` is a door's hinge: its axis vertical, its handle (the part farthest from
    the axis) more than :data:`DOOR_MIN_RADIUS` from it (:mod:`evaluations.prebuilt.libero.expert.door`)."""
    if f"{fixture}_axis" not in priv or f"{fixture}_handle" not in priv or f"{fixture}_anchor" not in priv:
        return False
    axis = part(priv, fixture, index, "axis")
    rel = part(priv, fixture, index, "handle") - part(priv, fixture, index, "anchor")
    return abs(float(axis[2])) > 0.9 and float(np.linalg.norm(rel[:2])) > DOOR_MIN_RADIUS

def slide_joint(priv: dict, fixture: str, index: int = 0) -> bool:
    """Whether joint ``index`` of ``fixture`` is a drawer's slide (its axis horizontal); the drawer's close keeps its
    own tilt and first lets go of a load (not a hinge's)."""
    return f"{fixture}_axis" in priv and abs(float(part(priv, fixture, index, "axis")[2])) < 0.5

def room_for(priv: dict, name: str) -> bool | None:
    """Whether the drawer of region ``name`` is out far enough for an ``in`` goal (``None``: not a drawer): past
    :data:`SLIDE_IN`, or past :data:`SLIDE_ROOM` with the gripper pointing down (not pulling it any more)."""
    joint = joint_of(priv, name)
    if joint is None:
        return None
    q = signed_qpos(priv, *joint)
    return q > SLIDE_IN or (q > SLIDE_ROOM and tilt(vec(priv, "eef_quat")) < TILT_TOL)

def knob_contact(priv: dict, fixture: str, index: int = 0) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(start, push waypoint, pushing)`` for turning a knob: the hand (fingers closed) comes down behind the
    bar's end (:data:`KNOB_START` in the bar's frame: along it, across it against the turn) and chases a point
    :data:`KNOB_LEAD` rad ahead of the bar at :data:`KNOB_RADIUS`, so the fingers push the end round (a point
    behind the bar left too small a command to overcome the bar's friction: it stalled at 0.13 rad). ``pushing``:
    the hand is low and behind the bar (angle about the axis between −1.4 and −0.25 rad of the bar's)."""
    eef = vec(priv, "eef_pos")
    anchor = part(priv, fixture, index, "anchor")
    sign = float(vec(priv, f"{fixture}_open")[index])
    q = float(vec(priv, f"{fixture}_qpos")[index])
    c, s = np.cos(q), np.sin(q)
    along, across = KNOB_START
    start = anchor + np.array([c * along + s * sign * across, s * along - c * sign * across, KNOB_PUSH_DZ])
    chase = q + sign * KNOB_LEAD
    waypoint = anchor + np.array([KNOB_RADIUS * np.cos(chase), KNOB_RADIUS * np.sin(chase), KNOB_PUSH_DZ])
    rel = eef - anchor
    angle = sign * float((np.arctan2(rel[1], rel[0]) - q + np.pi) % (2 * np.pi) - np.pi)
    radius = float(np.linalg.norm(rel[:2]))
    pushing = abs(rel[2] - KNOB_PUSH_DZ) < 0.015 and -1.4 < angle < -0.25 and 0.025 < radius < 0.08
    return start, waypoint, pushing

def turn_knob(priv: dict, fixture: str, index: int = 0) -> np.ndarray:
    """Come down behind the knob bar's end, fingers closed, tilted :data:`KNOB_TILT` toward the robot, and push
    the end round toward on, with the full step (the controller's largest offset): at 0.75 of it the hand stalled
    against the bar of a knob 1.5 cm nearer the robot (libero_10 task 2)."""
    eef, quat = vec(priv, "eef_pos"), vec(priv, "eef_quat")
    start, waypoint, pushing = knob_contact(priv, fixture, index)
    rot = rotate_to(quat, knob_orientation())
    if pushing:
        move = toward(eef, waypoint)
        return action(move / max(float(np.abs(move).max()), 1e-9), rot, 1.0)
    dxy = float(np.linalg.norm(eef[:2] - start[:2]))
    if dxy < 0.01 or (dxy < 0.02 and eef[2] < start[2] + 0.03):  # above the start: down, correcting xy
        return action(toward(eef, start), rot, 1.0)
    high = np.array([start[0], start[1], max(eef[2], start[2] + 0.08)])
    return action(toward(eef, high), rot, 1.0)

def knob_orientation() -> np.ndarray:
    """Pointing down, tilted :data:`KNOB_TILT` rad toward −x (about world +y), fingers along y."""
    return quat_mul(np.array([0.0, np.sin(KNOB_TILT / 2), 0.0, np.cos(KNOB_TILT / 2)]), down_with_yaw(0.0))

def open_drawer(priv: dict, fixture: str, index: int) -> np.ndarray:
    """Point horizontally into the drawer's front, close on its handle bar, pull it out."""
    eef, quat = vec(priv, "eef_pos"), vec(priv, "eef_quat")
    gap, speed = gap_speed(priv)
    handle, u = part(priv, fixture, index, "handle"), open_direction(priv, fixture, index)
    target = horizontal_grip(u)
    rot = rotate_to(quat, target)
    to_handle = float(np.linalg.norm(eef - handle))
    aligned = float(np.linalg.norm(rotation_error(quat, target))) < ALIGN_TOL
    if to_handle < HANDLE_TOL and 0.003 < gap < 0.072 and abs(speed) <= 0.01:  # holding: pull
        return action(toward(eef, handle + LEAD * u), rot, 1.0)
    if to_handle < HANDLE_TOL and speed < -0.01:
        return action(toward(eef, eef), rot, 1.0)
    if speed > 0.01 or gap < 0.072:  # opening, or closed on nothing: open and back away
        return action(toward(eef, eef + 0.05 * u), rot, -1.0)
    rel = eef - handle
    along = float(rel @ u)
    lateral = float(np.linalg.norm(rel - along * u))
    if aligned and lateral < 0.01 and -0.01 < along < PRE_GRASP + 0.02:  # on the line in front: come in
        return action(toward(eef, handle), rot, 1.0 if to_handle < 0.008 else -1.0)
    return action(toward(eef, handle + PRE_GRASP * u), rot if along > 0.03 else rotation_action(quat), -1.0)

def close_drawer(priv: dict, fixture: str, index: int) -> np.ndarray:
    """Fingers closed, pointing down: come down in front of the handle and push it in."""
    eef, quat = vec(priv, "eef_pos"), vec(priv, "eef_quat")
    handle, u = part(priv, fixture, index, "handle"), open_direction(priv, fixture, index)
    handle = handle + np.array([0.0, 0.0, CLOSE_DZ])
    rot = rotate_to(quat, close_orientation(u))
    start = handle + 0.04 * u
    rel = eef - handle
    along = float(rel @ u)
    lateral = float(np.linalg.norm((rel - along * u)[:2]))
    if lateral < 0.015 and abs(eef[2] - handle[2]) < 0.015 and along > -CLOSE_PAST:  # in front, low: push
        return action(toward(eef, handle - LEAD * u), rot, 1.0)
    if np.linalg.norm((eef - start)[:2]) < 0.01:  # above the start: go down
        return action(toward(eef, start), rot, 1.0)
    high = max(eef[2], handle[2] + 0.12)
    return action(toward(eef, np.array([start[0], start[1], high])), rot, 1.0)

def close_orientation(u: np.ndarray) -> np.ndarray:
    """Pointing down tilted :data:`CLOSE_TILT` rad into the cabinet (toward ``-u``, the closing direction), the
    fingers across ``u`` (the hand thin along the slide), as ``(x, y, z, w)``."""
    h = np.array([u[0], u[1], 0.0]) / max(float(np.hypot(u[0], u[1])), 1e-9)
    k = np.cross([0.0, 0.0, 1.0], h)
    turn = np.array([*(k * np.sin(CLOSE_TILT / 2)), np.cos(CLOSE_TILT / 2)])
    return quat_mul(turn, down_with_yaw(float(np.arctan2(h[1], h[0]))))

def untilt(priv: dict) -> np.ndarray | None:
    """With the gripper tilted over :data:`TILT_TOL`: open, back away along its axis from the handles, turn down."""
    eef, quat = vec(priv, "eef_pos"), vec(priv, "eef_quat")
    if tilt(quat) < TILT_TOL:
        return None
    gap, _ = gap_speed(priv)
    if gap < 0.072:
        return action(toward(eef, eef), np.zeros(3), -1.0)
    handles = [h for k in priv if k.endswith("_handle") for h in vec(priv, k).reshape(-1, 3)]
    nearest = min(handles, key=lambda h: float(np.linalg.norm(h - eef)), default=None)
    if nearest is not None and float(np.linalg.norm(nearest - eef)) < BACK_OFF:
        return action(toward(eef, eef - 0.05 * pointing(quat)), np.zeros(3), -1.0)
    if nearest is not None and eef[2] < nearest[2] + RISE_OVER:  # rise clear of the drawer before turning
        return action(toward(eef, eef + np.array([0.0, 0.0, 0.05])), np.zeros(3), -1.0)
    return action(toward(eef, eef + np.array([0.0, 0.0, 0.02])), rotate_to(quat, untilted(quat)), -1.0)
