"""A hinged door and the box behind it for ``prebuilt/libero-expert`` (:mod:`evaluations.prebuilt.libero.expert.model`):
``in <mug> <region of a fixture with a door>`` and ``close <that fixture>`` (libero_10 task 9: "put the yellow and
white mug in the microwave and close it").

Each function is stateless, like the other primitives, and reads only the privileged observation
(:mod:`evaluations.prebuilt.libero.privileged`):

* **Which fixture has a door** (:func:`~evaluations.prebuilt.libero.expert.fixtures.door_joint`): a joint whose
  axis is vertical and whose handle (the part farthest from the axis) is more than :data:`~evaluations.prebuilt.libero.expert.fixtures.DOOR_MIN_RADIUS` from it
  (a stove knob's bar is 5 cm long).
* **The opening** (:func:`front`): the face of the region's box nearest the door's hinge, its outward normal ``n``
  (horizontal) and the hinge's position along it (the door's plane when shut).
* **Put a mug in** (:func:`put_in`). A hand pointing down does not fit under the microwave's top (the hand's body
  reaches 2.4 to 12.6 cm above the end effector, the top's underside is 14 cm over the floor): the hand stays
  :data:`HAND_CLEAR` outside the door's plane. So the mug is gripped by its handle (pointing out of the opening),
  carried to :data:`FRONT` outside the opening at the release height, slid in until the hand is at
  :data:`HAND_CLEAR` from the plane, let go just above the floor, then pushed in by its handle with the fingers
  closed until its origin is :data:`INSIDE` within the region (LIBERO's ``In``: the origin inside the region's box).
* **Close the door** (:func:`close_door`): fingers closed, pointing down, the hand comes down beside the door on
  the side it must turn away from (:data:`DOOR_START`) and chases a point ahead of the door round the hinge
  (:data:`DOOR_LEAD`), as the knob's bar is pushed; the shutting door pushes the mug's handle the last centimetres in.
"""

from __future__ import annotations

import numpy as np

from .fixtures import door_joint
from .motion import EMPTY_GAP, MOVING, OPEN_GAP, action, gap_speed, toward, vec
from .place import HOVER, approach
from .rotation import rotation_action, wrap_yaw


__all__ = ["close_door", "door_of", "front", "handle_grasp", "inside", "put_in"]

#: The hand's centre stays this far (m) outside the door's plane (its body is 3.5 cm thick across the fingers).
HAND_CLEAR = 0.045
#: The carried mug comes down this far (m) farther out than its release point, then slides in level.
FRONT = 0.10
#: The mug is let go with its bottom this far (m) above the region's floor (the box's bottom).
FLOOR_CLEARANCE = 0.02
#: The mug counts as in once its origin is this far (m) inside the region's front face.
INSIDE = 0.01
#: Handle grip: this far (m) in from the bounding box's end along the handle, this far (m) below the box's top
#: (the handle's top bar; LIBERO's mugs have the handle along the body's +x axis).
HANDLE_INSET = 0.022
HANDLE_DEPTH = 0.023
#: Pushing the mug: the fingertips PUSH_DZ (m) above its bottom, starting PUSH_BEHIND (m) outside its handle's end.
PUSH_DZ = 0.045
PUSH_BEHIND = 0.03
#: Door push: start DOOR_START (rad) behind the handle's angle about the hinge, at DOOR_RADIUS (m) from it; chase a
#: point DOOR_LEAD (rad) ahead of the handle; the end effector DOOR_DZ (m) below the hinge's anchor (the door's mid
#: height), so the fingers and the hand's body push the panel.
DOOR_START = 0.45
DOOR_RADIUS = 0.18
DOOR_LEAD = 0.6
DOOR_DZ = 0.0
#: An open hand within DOOR_NEAR (m, xy) of the open door (its body is 21 cm long along the fingers) keeps DOOR_OVER
#: (m) above the region's top (the door's top is 1.2 cm over it): coming down diagonally from its start over the
#: door, the hand knocked a door open at −1.43 rad to −1.14, and the door then blocked the mug's way in.
DOOR_NEAR = 0.14
DOOR_OVER = 0.06
#: How far (m) a held mug may be from its grasp point and still count as held (pick and place allows 0.05).
HOLD_TOL = 0.03


def door_of(priv: dict, region: str) -> str | None:
    """The fixture with a door whose region ``region`` is (``microwave_1_heating_region`` → ``microwave_1``)."""
    if f"{region}_pos" not in priv or f"{region}_size" not in priv:
        return None
    for key in sorted(priv):
        fixture = key[: -len("_handle")] if key.endswith("_handle") else None
        if fixture and region.startswith(f"{fixture}_") and door_joint(priv, fixture):
            return fixture
    return None


def _axes(priv: dict, region: str) -> list[np.ndarray]:
    """The region box's horizontal axes (its frame's x and y, unit xy vectors; the site turned about z only)."""
    q = vec(priv, f"{region}_quat")
    yaw = 2.0 * float(np.arctan2(q[2], q[3]))
    return [np.array([np.cos(yaw), np.sin(yaw)]), np.array([-np.sin(yaw), np.cos(yaw)])]


def front(priv: dict, region: str, fixture: str) -> tuple[np.ndarray, float]:
    """``(n, plane)``: the outward unit normal (xy) of the region box's face nearest the door's hinge, and the hinge's
    coordinate along it (m; the shut door's plane)."""
    centre, size = vec(priv, f"{region}_pos"), vec(priv, f"{region}_size")
    axes = _axes(priv, region)
    rel = vec(priv, f"{fixture}_anchor")[:2] - centre[:2]
    gaps = [abs(float(rel @ a)) - float(size[i]) for i, a in enumerate(axes)]
    i = int(np.argmin(gaps))
    n = axes[i] * np.sign(float(rel @ axes[i]))
    return n, float(vec(priv, f"{fixture}_anchor")[:2] @ n)


def inside(priv: dict, obj: str, region: str) -> bool:
    """``obj``'s origin is within the region's box (LIBERO's ``In``: within its half-extents in its frame), at least
    :data:`INSIDE` behind the face of the opening."""
    pos, centre, size = vec(priv, f"{obj}_pos"), vec(priv, f"{region}_pos"), vec(priv, f"{region}_size")
    n, _ = front(priv, region, door_of(priv, region))
    rel = pos - centre
    for i, a in enumerate(_axes(priv, region)):
        c = float(rel[:2] @ a)
        if abs(float(a @ n)) > 0.5:  # the axis through the opening: the face toward it counts INSIDE in
            c *= float(np.sign(a @ n))
            if not -size[i] < c < size[i] - INSIDE:
                return False
        elif abs(c) >= size[i]:
            return False
    return bool(abs(rel[2]) < size[2])


def handle_grasp(priv: dict, obj: str) -> tuple[np.ndarray, float, np.ndarray]:
    """``(end-effector grasp point, yaw, handle direction)`` of a mug gripped by its handle's top bar from above,
    the fingers across the handle: :data:`HANDLE_INSET` in from the bounding box's end along the handle (the mug's
    +x axis), :data:`HANDLE_DEPTH` below its top."""
    pos, box = vec(priv, f"{obj}_pos"), vec(priv, f"{obj}_aabb")
    x, y, z, w = vec(priv, f"{obj}_quat")
    h = np.array([1 - 2 * (y * y + z * z), 2 * (x * y + w * z)])
    h = h / max(float(np.linalg.norm(h)), 1e-9)
    corners = np.array([[box[0], box[1]], [box[0], box[4]], [box[3], box[1]], [box[3], box[4]]])
    reach = float(((corners - pos[:2]) @ h).max())
    xy = pos[:2] + (reach - HANDLE_INSET) * h
    return np.array([*xy, box[5] - HANDLE_DEPTH]), wrap_yaw(float(np.arctan2(h[1], h[0]))), h


def put_in(priv: dict, obj: str, region: str) -> np.ndarray:
    """The action (7 floats in [-1, 1]) putting the mug ``obj`` into ``region`` (behind a door): grip it by its
    handle, carry it to the opening, slide it in, let it go, push it in (see the module). ``region`` must be a region
    of a fixture with a door (:func:`door_of`), ``obj`` have a ``_pos``, ``_quat`` and ``_aabb``."""
    fixture = door_of(priv, region)
    eef, quat = vec(priv, "eef_pos"), vec(priv, "eef_quat")
    gap, speed = gap_speed(priv)
    grasp, yaw, _ = handle_grasp(priv, obj)
    box, pos = vec(priv, f"{obj}_aabb"), vec(priv, f"{obj}_pos")
    n, plane = front(priv, region, fixture)
    t = np.array([-n[1], n[0]])
    centre, size = vec(priv, f"{region}_pos"), vec(priv, f"{region}_size")
    floor = float(centre[2] - size[2])
    near = float(np.linalg.norm(eef - grasp))
    rot = rotation_action(quat, yaw)
    held = EMPTY_GAP < gap < OPEN_GAP and near < HOLD_TOL and abs(speed) <= MOVING
    on_floor = box[2] > floor - 0.01 and float(pos[:2] @ n) < plane + 0.02
    if speed > MOVING:  # opening after the release: rise clear of the mug
        return action(toward(eef, np.array([eef[0], eef[1], max(eef[2], box[5] + 0.03)])), rot, -1.0)
    if held:  # keeping the yaw it has: the yaw of a mug swinging in the fingers chased by the hand turned it on
        move, grip = _carry_in(priv, eef, box, pos, n, t, plane, centre, floor)
        return action(move, rotation_action(quat), grip)
    if on_floor:
        return _push_in(priv, eef, box, pos, n, t, plane, rot)
    if speed < -MOVING and near < HOLD_TOL:  # closing on the handle
        return action(toward(eef, eef), rot, 1.0)
    if gap < OPEN_GAP:  # part-closed on nothing: open
        return action(toward(eef, eef), rot, -1.0)
    top = float(centre[2] + size[2]) + DOOR_OVER
    if _near_door(priv, fixture, eef) and eef[2] < top - 0.01:  # over the open door: rise above its top first
        return action(toward(eef, np.array([*(eef[:2] + 0.3 * (grasp[:2] - eef[:2])), top])), rot, -1.0)
    move, grip = approach(priv, eef, grasp, grasp[2] + HOVER)
    return action(move, rot, grip)


def _near_door(priv: dict, fixture: str, eef: np.ndarray) -> bool:
    """The hand's xy is within :data:`DOOR_NEAR` of the door (the segment from its hinge to its handle)."""
    anchor, handle = vec(priv, f"{fixture}_anchor")[:2], vec(priv, f"{fixture}_handle")[:2]
    seg = handle - anchor
    k = float(np.clip((eef[:2] - anchor) @ seg / max(float(seg @ seg), 1e-9), 0.0, 1.0))
    return float(np.linalg.norm(eef[:2] - anchor - k * seg)) < DOOR_NEAR


def _carry_in(priv: dict, eef: np.ndarray, box: np.ndarray, pos: np.ndarray, n: np.ndarray, t: np.ndarray,
              plane: float, centre: np.ndarray, floor: float) -> tuple[np.ndarray, float]:
    """``(move, grip)`` while holding the mug: to :data:`FRONT` outside the release point at the release height,
    in level to the release point (the hand :data:`HAND_CLEAR` outside the door's plane), open there."""
    lateral = float(centre[:2] @ t) - float((pos[:2] - eef[:2]) @ t)  # the origin in line with the region's centre
    release_z = eef[2] + (floor + FLOOR_CLEARANCE - box[2])
    final = np.array([*(lateral * t + (plane + HAND_CLEAR) * n), release_z])
    start = final + np.array([*(FRONT * n), 0.0])
    s = float(eef[:2] @ n)
    lined_up = abs(float(eef[:2] @ t) - lateral) < 0.015 and abs(eef[2] - release_z) < 0.02
    if lined_up and plane + HAND_CLEAR - 0.01 < s < plane + HAND_CLEAR + FRONT + 0.02:
        done = float(np.linalg.norm(eef - final)) < 0.012
        slow = float(np.linalg.norm(vec(priv, "eef_vel"))) < 0.005 and s < plane + HAND_CLEAR + 0.02
        return toward(eef, final), (-1.0 if done or slow else 1.0)
    high = max(release_z, eef[2]) if float(np.linalg.norm(eef[:2] - start[:2])) > 0.02 else release_z
    waypoint = np.array([start[0], start[1], high]) if eef[2] > release_z - 0.03 else np.array([*eef[:2], release_z])
    return toward(eef, waypoint), 1.0


def _push_in(priv: dict, eef: np.ndarray, box: np.ndarray, pos: np.ndarray, n: np.ndarray, t: np.ndarray,
             plane: float, rot: np.ndarray) -> np.ndarray:
    """Fingers closed: come down :data:`PUSH_BEHIND` outside the mug's handle end and push it in along −n until the
    hand is :data:`HAND_CLEAR` from the door's plane."""
    corners = np.array([[box[0], box[1]], [box[0], box[4]], [box[3], box[1]], [box[3], box[4]]])
    end = float((corners @ n).max())
    lateral = float(pos[:2] @ t)
    z = box[2] + PUSH_DZ
    behind = np.array([*(lateral * t + (end + PUSH_BEHIND) * n), z])
    s, off = float(eef[:2] @ n), abs(float(eef[:2] @ t) - lateral)
    if abs(eef[2] - z) < 0.015 and off < 0.02 and s > end - 0.005:  # low behind the handle: push
        goal = np.array([*(lateral * t + (plane + HAND_CLEAR) * n), z])
        return action(toward(eef, goal), rot, 1.0)
    if float(np.linalg.norm(eef[:2] - behind[:2])) < 0.01:
        return action(toward(eef, behind), rot, 1.0)
    return action(toward(eef, np.array([*behind[:2], max(eef[2], box[5] + 0.04)])), rot, 1.0)


def close_door(priv: dict, fixture: str, index: int = 0) -> np.ndarray:
    """Fingers closed, pointing down: come down :data:`DOOR_START` behind the door's handle (about the hinge, on the
    side the door turns away from) and chase a point :data:`DOOR_LEAD` ahead of it, so the hand pushes the door shut."""
    eef, quat = vec(priv, "eef_pos"), vec(priv, "eef_quat")
    anchor = vec(priv, f"{fixture}_anchor")[3 * index : 3 * index + 3]
    axis_z = float(vec(priv, f"{fixture}_axis")[3 * index + 2])
    sign = -float(vec(priv, f"{fixture}_open")[index]) * np.sign(axis_z)  # +1: shuts counter-clockwise from above
    rel_h = vec(priv, f"{fixture}_handle")[3 * index : 3 * index + 2] - anchor[:2]
    phi = float(np.arctan2(rel_h[1], rel_h[0]))
    z = anchor[2] + DOOR_DZ

    def at(angle: float) -> np.ndarray:
        return np.array([anchor[0] + DOOR_RADIUS * np.cos(angle), anchor[1] + DOOR_RADIUS * np.sin(angle), z])

    start, chase = at(phi - sign * DOOR_START), at(phi + sign * DOOR_LEAD)
    rel = eef[:2] - anchor[:2]
    angle = sign * float((np.arctan2(rel[1], rel[0]) - phi + np.pi) % (2 * np.pi) - np.pi)
    radius = float(np.linalg.norm(rel))
    yaw = wrap_yaw(phi + np.pi / 2)  # the fingers along the door: the hand's flat side against it
    rot = rotation_action(quat, yaw)
    if abs(eef[2] - z) < 0.02 and -1.0 < angle < 0.05 and 0.08 < radius < 0.3:  # low, behind the door: push
        move = toward(eef, chase)
        return action(move / max(float(np.abs(move).max()), 1e-9), rot, 1.0)
    if float(np.linalg.norm(eef[:2] - start[:2])) < 0.015:
        return action(toward(eef, start), rot, 1.0)
    high = max(eef[2], z + 0.15)
    return action(toward(eef, np.array([start[0], start[1], high])), rot, 1.0)
