"""Position steps of ``prebuilt/libero-expert``: the OSC_POSE delta toward a waypoint (1 action unit = 5 cm).
And the gripper's states: open, closed on nothing, its fingers moving.
"""

from __future__ import annotations

import numpy as np


#: Position gain: action units per metre of waypoint error (1 unit = 5 cm of OSC_POSE delta).
GAIN = 12.0
#: Smallest position step (action units) while the waypoint is more than 3 mm away.
MIN_STEP = 0.25


def toward(eef: np.ndarray, waypoint: np.ndarray) -> np.ndarray:
    """Proportional step (3 action units in [-1, 1]) from ``eef`` toward ``waypoint`` (both m, world frame), at
    least :data:`MIN_STEP` outside a 3 mm dead band (the impedance controller leaves a steady-state error that a
    purely proportional command never closes)."""
    error = waypoint - eef
    norm = float(np.linalg.norm(error))
    if norm < 0.003:
        return np.clip(GAIN * error, -1.0, 1.0)
    return np.clip(error / norm * max(GAIN * norm, MIN_STEP), -1.0, 1.0)


def vec(priv: dict, key: str) -> np.ndarray:
    """``priv[key]`` (a privileged observation's entry) as a flat float64 array; KeyError if it is absent."""
    return np.asarray(priv[key], dtype=np.float64).reshape(-1)


def action(move: np.ndarray, rot: np.ndarray, grip: float) -> np.ndarray:
    """One OSC_POSE action, 7 float32: ``move`` (3 position units), ``rot`` (3 rotation units), ``grip`` (+1 closes,
    −1 opens)."""
    return np.concatenate([move, rot, [grip]]).astype(np.float32)


def gap_speed(priv: dict) -> tuple[float, float]:
    """``(gap (m), its speed (m/step))`` between the gripper's two fingers, from ``gripper_qpos`` / ``gripper_qvel``."""
    qpos, qvel = vec(priv, "gripper_qpos"), vec(priv, "gripper_qvel")
    return float(qpos[0] - qpos[1]), float(qvel[0] - qvel[1])


#: Finger gap (m, ``qpos[0] - qpos[1]``) above which the gripper counts as open.
OPEN_GAP = 0.072

#: Finger gap below which the gripper is closed on nothing.
EMPTY_GAP = 0.003

#: Finger gap speed (m/s) above which the fingers are still moving.
MOVING = 0.01
