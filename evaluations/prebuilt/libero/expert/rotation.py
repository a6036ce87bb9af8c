"""Orientation math of the LIBERO expert (:mod:`evaluations.prebuilt.libero.expert.model`): quaternions are robosuite's
``(x, y, z, w)``, angles in radians, rotation actions in the OSC controller's units (1 unit = 0.5 rad). Where the gripper points, and the orientations the primitives turn it to.
"""

from __future__ import annotations

import numpy as np


#: Gripper pointing straight down, x-axis forward: robosuite's default end-effector orientation (x, y, z, w).
DOWN = np.array([1.0, 0.0, 0.0, 0.0])

#: Rotation gain: action units per radian of orientation error (1 unit = 0.5 rad).
ROT_GAIN = 1.0


def wrap_yaw(yaw: float) -> float:
    """Yaw modulo π (the two fingers are symmetric), in [−π/2, π/2)."""
    return float((yaw + np.pi / 2) % np.pi - np.pi / 2)


def yaw_of(quat_xyzw: np.ndarray) -> float:
    """Yaw (rad) of the gripper relative to :data:`DOWN` about world z."""
    rel = quat_mul(np.asarray(quat_xyzw, dtype=np.float64), DOWN * np.array([-1.0, -1.0, -1.0, 1.0]))
    return wrap_yaw(2.0 * float(np.arctan2(rel[2], rel[3])))


def down_with_yaw(yaw: float) -> np.ndarray:
    return quat_mul(np.array([0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)]), DOWN)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of two ``(x, y, z, w)`` quaternions."""
    (ax, ay, az, aw), (bx, by, bz, bw) = a, b
    return np.array([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ])


def rotation_error(quat_xyzw: np.ndarray, target_xyzw: np.ndarray = DOWN) -> np.ndarray:
    """World-frame axis-angle (rad) taking the current orientation to the target (shortest way)."""
    q = np.asarray(quat_xyzw, dtype=np.float64)
    err = quat_mul(np.asarray(target_xyzw, dtype=np.float64), q * np.array([-1.0, -1.0, -1.0, 1.0]) / (q @ q))
    if err[3] < 0:
        err = -err
    sin = float(np.linalg.norm(err[:3]))
    if sin < 1e-9:
        return np.zeros(3)
    return 2.0 * np.arctan2(sin, err[3]) * err[:3] / sin


def rotation_action(quat_xyzw: np.ndarray, yaw: float | None = None) -> np.ndarray:
    """Rotation action toward pointing down with ``yaw`` (``None``: keep the current yaw); 1 unit = 0.5 rad."""
    target = down_with_yaw(yaw_of(quat_xyzw) if yaw is None else yaw)
    return np.clip(ROT_GAIN * rotation_error(quat_xyzw, target) / 0.5, -1.0, 1.0)


def pointing(quat_xyzw: np.ndarray) -> np.ndarray:
    """The gripper's approach axis in the world (unit 3-vector; ``(0, 0, -1)`` when pointing down)."""
    x, y, z, w = np.asarray(quat_xyzw, dtype=np.float64) / np.linalg.norm(quat_xyzw)
    return np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])

def tilt(quat_xyzw: np.ndarray) -> float:
    """Angle (rad) between the gripper's approach axis and straight down."""
    return float(np.arccos(np.clip(-pointing(quat_xyzw)[2], -1.0, 1.0)))

def horizontal_grip(direction: np.ndarray) -> np.ndarray:
    """Orientation ``(x, y, z, w)`` pointing the gripper along the horizontal ``direction``, fingers opening
    vertically: pointing down with the fingers along ``direction``, turned 90° about ``z × direction`` (which takes
    straight down to ``-direction``)."""
    u = np.asarray(direction, dtype=np.float64).copy()
    u[2] = 0.0
    u /= max(float(np.linalg.norm(u)), 1e-9)
    down = down_with_yaw(float(np.arctan2(-u[1], -u[0])) - np.pi / 2)
    k = np.cross([0.0, 0.0, 1.0], u)
    turn = np.array([*(k * np.sin(np.pi / 4)), np.cos(np.pi / 4)])
    return quat_mul(turn, down)

def rotate_to(quat: np.ndarray, target: np.ndarray) -> np.ndarray:
    return np.clip(rotation_error(quat, target) / 0.5, -1.0, 1.0)

def untilted(quat_xyzw: np.ndarray) -> np.ndarray:
    """Pointing down, reached from ``quat_xyzw`` by a turn about a horizontal axis only: the inverse of
    :func:`horizontal_grip` (turning down "with the current yaw" is ill-defined for a horizontal gripper, and
    the wrist went the long way round to a joint limit, tilted 0.3 rad, until the step cap)."""
    u = -pointing(quat_xyzw)
    return down_with_yaw(float(np.arctan2(-u[1], -u[0])) - np.pi / 2)
