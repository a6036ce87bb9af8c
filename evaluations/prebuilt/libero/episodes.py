"""How a LIBERO episode starts and what it observes, as LeRobot 0.4.4's LiberoEnv runs it: shared by the catalog
(:mod:`evaluations.prebuilt.libero`, importable without LIBERO) and the env (:mod:`evaluations.prebuilt.libero.env`)."""

from __future__ import annotations

#: Fixed init states per task (every task of the five suites ships 50).
NUM_INIT_STATES = 50
#: No-op steps after each reset while objects settle (LeRobot's ``num_steps_wait``), not counted as policy steps.
SETTLE_STEPS = 10
#: The no-op action of those steps (LeRobot's ``get_libero_dummy_action``): no motion, gripper open.
DUMMY_ACTION = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)
#: Side of both camera images (LeRobot's ``observation_height``/``observation_width``).
IMAGE_SIZE = 256
#: Which cameras the observation carries (``cameras`` make parameter): LeRobot's keys ``image`` (agentview) and
#: ``image2`` (wrist, ``robot0_eye_in_hand``).
CAMERAS: dict[str, tuple[str, ...]] = {"none": (), "agentview": ("agentview",), "both": ("agentview", "robot0_eye_in_hand")}
CAMERA_KEYS: dict[str, str] = {"agentview": "image", "robot0_eye_in_hand": "image2"}
#: Environment variable that forces robosuite's hard reset (a rebuild per episode) for every LIBERO env of the
#: process, like the ``hard_reset`` make parameter: ``1``/``true``/``yes``. Unset: the compiled scene is restored.
HARD_RESET_ENV = "RLMESH_LIBERO_HARD_RESET"


def init_state_index(seed: int) -> int:
    """The fixed init state a reset with ``seed`` uses: ``seed mod 50`` (episode ``i`` of a task with seed ``s``
    gets ``(s + i) mod 50``, so 50 consecutive seeds cover every init state once)."""
    return int(seed) % NUM_INIT_STATES
