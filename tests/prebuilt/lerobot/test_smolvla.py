"""prebuilt/smolvla/libero's model (evaluations/prebuilt/lerobot/smolvla.py) in .venv-lerobot, on a tiny random SmolVLA built
offline with lerobot's own classes: it loads a checkpoint named as the published ones (Hub backbone id) from local
folders, maps a LIBERO observation to a 7-dim action, keeps one action queue per episode, and refuses to load
without weights."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluations.prebuilt.lerobot.smolvla import instruction_of, weights_problem
from tests.support.smolvla import LEROBOT_INSTALLED, build_tiny_checkpoint, run_in_lerobot

pytestmark = pytest.mark.skipif(not LEROBOT_INSTALLED, reason="run scripts/setup-lerobot.sh (make test does)")

#: A LIBERO observation as prebuilt/libero delivers one, and a model built from the checkpoint folders.
PRELUDE = """
import json, sys
import numpy as np
from evaluations.prebuilt.lerobot.smolvla import SmolVLALibero
policy_dir, backbone_dir = sys.argv[1], sys.argv[2]
model = SmolVLALibero.from_config(policy_dir=policy_dir, backbone_dir=backbone_dir)
def observation(seed):
    rng = np.random.default_rng(seed)
    return {"pixels": {"image": rng.integers(0, 256, (256, 256, 3), dtype=np.uint8),
                       "image2": rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)},
            "agent_pos": rng.normal(size=8).astype(np.float32), "instruction": "open the middle drawer of the cabinet"}
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_checkpoint(tmp_path_factory.mktemp("smolvla"))


def test_the_tiny_checkpoint_names_the_hub_backbone_as_the_published_ones_do(tiny):
    policy, backbone = tiny
    assert json.loads((policy / "config.json").read_text())["vlm_model_name"] == "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"
    assert weights_problem(policy, backbone) is None


def test_it_loads_offline_and_maps_a_libero_observation_to_a_7_dim_action(tiny):
    out = run_in_lerobot(PRELUDE + """
actions = [model.predict(observation(0), {"episode_id": "e", "episode_seed": 0, "state": state})
           for state in [{}] for _ in range(3)]
batch = model.batch(observation(0))
print(json.dumps({"shapes": [list(a.shape) for a in actions], "dtypes": sorted({str(a.dtype) for a in actions}),
                  "low": min(float(a.min()) for a in actions), "high": max(float(a.max()) for a in actions),
                  "distinct": len({a.tobytes() for a in actions}), "vlm": model.policy.config.vlm_model_name,
                  "keys": sorted(batch), "image": list(batch["observation.images.image"].shape),
                  "image_max": float(batch["observation.images.image"].max()),
                  "state": list(batch["observation.state"].shape), "task": batch["task"],
                  "same_pixel": bool(abs(float(batch["observation.images.image"][0, 0, 0, 0])
                                         - observation(0)["pixels"]["image"][0, 0, 0] / 255) < 1e-6)}))
""", *map(str, tiny))
    assert out["shapes"] == [[7]] * 3 and out["dtypes"] == ["float32"]
    assert -1.0 <= out["low"] <= out["high"] <= 1.0
    assert out["distinct"] == 3  # three steps of one planned chunk, not one action repeated
    assert out["vlm"] == str(tiny[1])  # the local backbone folder, not the Hub id the checkpoint names
    assert out["keys"] == ["observation.images.image", "observation.images.image2", "observation.state", "task"]
    assert out["image"] == [1, 3, 256, 256] and out["image_max"] <= 1.0 and out["state"] == [1, 8]
    assert out["task"] == ["open the middle drawer of the cabinet"]
    assert out["same_pixel"]  # prebuilt/libero already rotates the renders as LeRobot does: not flipped again


def test_each_episode_has_its_own_action_queue(tiny):
    """Two episodes interleaved on one model get exactly the actions each gets alone; a new episode re-plans."""
    out = run_in_lerobot(PRELUDE + """
def run(episodes, steps):
    states = {name: {} for name, _ in episodes}
    return [model.predict(observation(10 * seed + step), {"episode_id": name, "episode_seed": seed,
                                                          "state": states[name]}).tolist()
            for step in range(steps) for name, seed in episodes]
print(json.dumps({"a": run([("a", 1)], 3), "b": run([("b", 2)], 3), "mixed": run([("a", 1), ("b", 2)], 3),
                  "again": run([("a2", 1)], 1)}))
""", *map(str, tiny))
    assert out["a"] != out["b"]
    assert out["mixed"][0::2] == out["a"] and out["mixed"][1::2] == out["b"]
    assert out["again"] == out["a"][:1]  # a new episode plans afresh (its noise seeded by the episode seed)


def test_without_weights_it_refuses_to_load_and_names_the_settings(tmp_path):
    out = run_in_lerobot("""
import json
from evaluations.prebuilt.lerobot.smolvla import SmolVLALibero
try:
    SmolVLALibero()
except FileNotFoundError as exc:
    print(json.dumps({"error": str(exc)}))
""")
    assert "RLMESH_SMOLVLA_LIBERO_DIR is not set" in out["error"] and "docs/running/smolvla-weights.md" in out["error"]
    assert "lacks config.json" in weights_problem(tmp_path, tmp_path)


@pytest.mark.parametrize("observation, text", [
    ({"instruction": "put the bowl on the plate"}, "put the bowl on the plate"),
    ({"task": np.array("pick up the soup")}, "pick up the soup"),
    ({"agent_pos": np.zeros(8), "goal": b"turn on the stove"}, "turn on the stove"),
    ({"agent_pos": np.zeros(8)}, ""),
])
def test_the_instruction_is_read_from_the_observation(observation, text):
    assert instruction_of(observation) == text
