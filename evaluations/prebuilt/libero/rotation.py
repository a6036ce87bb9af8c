"""Orientation math of the LIBERO expert (:mod:`evaluations.prebuilt.libero.expert`): quaternions are robosuite's
``(x, y, z, w)``, angles in radians, rotation actions in the OSC controller's units (1 unit = 0.5 rad)."""

from __future__ import annotations

import numpy as np

__all__ = ["DOWN", "ROT_GAIN", "rotation_action", "rotation_error", "wrap_yaw", "yaw_of"]

#: Gripper pointing straight down, x-axis forward: robosuite's default end-effector orientation (x, y, z, w).
DOWN = np.array([1.0, 0.0, 0.0, 0.0])

#: Rotation gain: action units per radian of orientation error (1 unit = 0.5 rad).
ROT_GAIN = 1.0


def wrap_yaw(yaw: float) -> float:
    """Yaw modulo π (the two fingers are symmetric), in [−π/2, π/2)."""
    return float((yaw + np.pi / 2) % np.pi - np.pi / 2)


def yaw_of(quat_xyzw: np.ndarray) -> float:
    """Yaw (rad) of the gripper relative to :data:`DOWN` about world z."""
    rel = _quat_mul(np.asarray(quat_xyzw, dtype=np.float64), DOWN * np.array([-1.0, -1.0, -1.0, 1.0]))
    return wrap_yaw(2.0 * float(np.arctan2(rel[2], rel[3])))


def _down_with_yaw(yaw: float) -> np.ndarray:
    return _quat_mul(np.array([0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)]), DOWN)


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
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
    err = _quat_mul(np.asarray(target_xyzw, dtype=np.float64), q * np.array([-1.0, -1.0, -1.0, 1.0]) / (q @ q))
    if err[3] < 0:
        err = -err
    sin = float(np.linalg.norm(err[:3]))
    if sin < 1e-9:
        return np.zeros(3)
    return 2.0 * np.arctan2(sin, err[3]) * err[:3] / sin


def rotation_action(quat_xyzw: np.ndarray, yaw: float | None = None) -> np.ndarray:
    """Rotation action toward pointing down with ``yaw`` (``None``: keep the current yaw); 1 unit = 0.5 rad."""
    target = _down_with_yaw(yaw_of(quat_xyzw) if yaw is None else yaw)
    return np.clip(ROT_GAIN * rotation_error(quat_xyzw, target) / 0.5, -1.0, 1.0)
