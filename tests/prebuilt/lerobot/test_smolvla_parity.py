"""SmolVLA's input parity (issue #27): from the same robosuite observation, the batch ``prebuilt/smolvla`` hands
``SmolVLAPolicy.select_action`` (after ``prebuilt/libero``'s observation) equals what ``lerobot-eval``'s own pipeline
builds (LeRobot's LiberoEnv formatting, ``preprocess_observation``, ``add_envs_task``, ``LiberoProcessorStep``, the
checkpoint's pre-processor), on the tiny offline checkpoint, in ``.venv-lerobot``
(:mod:`tests.support.smolvla_parity`)."""

from __future__ import annotations

import pytest

from tests.support.smolvla import LEROBOT_PYTHON, build_tiny_checkpoint, run_in_lerobot

pytestmark = pytest.mark.skipif(not LEROBOT_PYTHON.exists(), reason="run scripts/setup-lerobot.sh (make test does)")

# End-effector quaternions (x, y, z, w): LIBERO's gripper pointing down (w ≈ 0), one with w < 0 (the antipodal
# sign: both sides must keep it, not normalise it), a small rotation (w ≈ 1), a random one.
_SCRIPT = """
import json, sys
import numpy as np
from evaluations.prebuilt.lerobot.smolvla import SmolVLALibero
from tests.support import smolvla_parity as sp
policy_dir, backbone_dir = sys.argv[1], sys.argv[2]
model = SmolVLALibero.from_config(policy_dir=policy_dir, backbone_dir=backbone_dir)
lerobot_eval = sp.LeRobotEvalInput(policy_dir, backbone_dir, suite="libero_spatial")
rng = np.random.default_rng(7)
instruction = "pick up the black bowl next to the plate and place it on the plate"
quats = [[0.9995, 0.0123, -0.0281, 0.0057], [0.02, 0.99, 0.05, -0.12], [0.01, -0.02, 0.03, 0.9993], rng.normal(size=4)]
out = []
for q in quats:
    q = np.asarray(q, dtype=np.float64)
    raw = {"agentview_image": rng.integers(0, 256, (256, 256, 3), dtype=np.uint8),
           "robot0_eye_in_hand_image": rng.integers(0, 256, (256, 256, 3), dtype=np.uint8),
           "robot0_eef_pos": rng.normal(size=3) * 0.3 + [0.0, 0.0, 1.0], "robot0_eef_quat": q / np.linalg.norm(q),
           "robot0_gripper_qpos": np.array([0.039, -0.039]) * rng.uniform(0, 1),
           "robot0_gripper_qvel": rng.normal(size=2),
           "robot0_joint_pos": rng.normal(size=7), "robot0_joint_vel": rng.normal(size=7)}
    ours = sp.our_select_action_input(model, sp.our_observation(raw, instruction))
    theirs = lerobot_eval(sp.lerobot_observation(raw), instruction)
    out.append(sp.compare_inputs(ours, theirs))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    policy, backbone = build_tiny_checkpoint(tmp_path_factory.mktemp("smolvla"))
    return run_in_lerobot(_SCRIPT, str(policy), str(backbone))


@pytest.mark.slow
def test_images_language_and_task_equal_lerobot_evals_exactly(compared):
    for keys in compared:
        for key in ("observation.images.image", "observation.images.image2", "observation.language.tokens",
                    "observation.language.attention_mask", "task"):
            assert keys[key] == "equal", (key, keys)
        assert "missing" not in keys.values() and "differs" not in keys.values(), keys


@pytest.mark.slow
def test_the_state_equals_lerobots_but_the_last_bits_of_its_axis_angle(compared):
    """Position and gripper bit for bit; the axis-angle within float32 rounding (docs/using/libero.md: LeRobot's is
    computed by torch's float32 kernels, ours in float64 rounded once)."""
    diffs = [keys["observation.state"] for keys in compared]
    assert all(d == "equal" or (isinstance(d, float) and d < 1e-5) for d in diffs), diffs
