"""Recorded steps → LeRobot features and frames (evaluations.datasets.lerobot_frames), and the step recorder that
writes them (evaluations.runs.steps), without a simulator or lerobot: LIBERO-shaped, Meta-World-shaped and plain
observations built by hand."""

from __future__ import annotations

import io

import numpy as np
import pytest

from evaluations.datasets.lerobot_frames import (MappingProblem, feature_map, features, frames, header_arrays,
                                                 instruction, shape_differences)
from evaluations.runs.steps import StepRecorder, flatten, load_steps

STEPS = 4


def _libero_obs(t: int) -> dict:
    rng = np.random.default_rng(t)
    return {"agent_pos": np.full(8, t, dtype=np.float32),
            "pixels": {"image": rng.integers(0, 255, (8, 8, 3), dtype=np.uint8),
                       "image2": rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)},
            "instruction": "put the bowl on the plate",
            "privileged": {"bowl_pos": np.full(3, t, dtype=np.float64)}}


def _record(make_obs, action=lambda t: np.full(7, t / 10, dtype=np.float32), success_at=STEPS) -> dict:
    """The arrays a StepRecorder writes for a STEPS-step episode, read back from the .npz bytes."""
    recorder = StepRecorder(True)
    recorder.reset(make_obs(0))
    for t in range(STEPS):
        last = t == STEPS - 1
        recorder.step(action(t), make_obs(t + 1), reward=float(t), terminated=last and success_at == STEPS,
                      truncated=False, info={"success": float(t + 1 >= success_at)})
    arrays, skipped = recorder.arrays()
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    buffer.seek(0)
    return load_steps(buffer)


def test_libero_steps_map_to_lerobots_libero_keys():
    arrays = _record(_libero_obs)
    assert arrays["obs/pixels.image"].shape == (STEPS + 1, 8, 8, 3) and arrays["action"].shape == (STEPS, 7)
    assert feature_map(arrays) == {"observation.images.image": "obs/pixels.image",
                                   "observation.images.image2": "obs/pixels.image2",
                                   "observation.state": "obs/agent_pos"}
    spec = features(arrays)
    assert spec["observation.images.image"] == {"dtype": "image", "shape": (8, 8, 3), "names": ["height", "width", "channel"]}
    assert spec["observation.state"]["shape"] == (8,) and spec["action"] == {"dtype": "float32", "shape": (7,), "names": None}
    assert {"next.reward", "next.done", "next.success"} <= set(spec) and not any("privileged" in k for k in spec)
    assert features(arrays, images="video")["observation.images.image2"]["dtype"] == "video"


def test_frame_t_is_the_observation_before_step_t_and_that_steps_action():
    arrays = _record(_libero_obs, success_at=STEPS)
    out = list(frames(arrays, task="fallback"))
    assert len(out) == STEPS  # the observation after the last step is no frame
    for t, frame in enumerate(out):
        assert np.array_equal(frame["observation.images.image"], _libero_obs(t)["pixels"]["image"])
        assert np.array_equal(frame["observation.state"], np.full(8, t, dtype=np.float32))
        assert np.array_equal(frame["action"], np.full(7, t / 10, dtype=np.float32))
        assert frame["next.reward"].tolist() == [float(t)] and frame["next.reward"].dtype == np.float32
        assert frame["next.done"].tolist() == [t == STEPS - 1]
        assert frame["next.success"].tolist() == [t == STEPS - 1]
        assert frame["task"] == "put the bowl on the plate"  # the observation's instruction, not the fallback


def test_metaworld_and_plain_observations_map_to_state_and_images():
    def metaworld(t):
        return {"state": np.arange(39, dtype=np.float64) + t, "task": "reach-v3",
                "image": np.full((6, 6, 3), t, dtype=np.uint8)}

    arrays = _record(metaworld, action=lambda t: np.zeros(4))
    assert feature_map(arrays) == {"observation.images.image": "obs/image", "observation.state": "obs/state"}
    frame = next(frames(arrays, task="fallback"))
    assert frame["observation.state"].dtype == np.float32 and frame["task"] == "reach-v3"
    plain = _record(lambda t: np.array([t, 0.5, 0.0, 1.0]), action=lambda t: t % 2)  # CartPole: Box(4), Discrete(2)
    assert feature_map(plain) == {"observation.state": "obs/"}
    assert features(plain)["action"]["shape"] == (1,)
    assert [f["action"].tolist() for f in frames(plain, task="CartPole-v1")] == [[0.0], [1.0], [0.0], [1.0]]
    assert {f["task"] for f in frames(plain, task="CartPole-v1")} == {"CartPole-v1"}  # no instruction: the fallback


def test_observations_without_image_or_state_are_refused_in_words():
    arrays = _record(lambda t: {"privileged": {"x": np.zeros(3)}, "instruction": "do it"})
    with pytest.raises(MappingProblem, match="no image nor state"):
        feature_map(arrays)
    assert instruction(arrays) == "do it"


def test_a_leaf_that_changes_shape_is_left_out_and_named():
    recorder = StepRecorder(True)
    recorder.reset({"agent_pos": np.zeros(3), "varying": np.zeros(2)})
    recorder.step(np.zeros(1), {"agent_pos": np.ones(3), "varying": np.zeros(5)}, 0.0, True, False, {})
    arrays, skipped = recorder.arrays()
    assert skipped == ["obs/varying"] and "obs/agent_pos" in arrays and arrays["success"].tolist() == [-1]


def test_flatten_names_nested_leaves_by_dotted_path():
    assert flatten({"a": {"b": 1, "c": [2, 3]}, "d": "x"}) == {"a.b": 1, "a.c.0": 2, "a.c.1": 3, "d": "x"}
    assert flatten(np.zeros(2)).keys() == {""}


def test_features_read_from_the_npy_headers_alone_equal_the_loaded_arrays_features():
    arrays = _record(_libero_obs)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    buffer.seek(0)
    headers = header_arrays(buffer)
    assert {k: (v.shape, v.dtype) for k, v in headers.items()} == {k: (v.shape, v.dtype) for k, v in arrays.items()}
    assert headers["obs/pixels.image"].strides == (0, 0, 0, 0)  # nothing but the header was read
    assert features(headers, images="video") == features(arrays, images="video")
    plain = features(_record(lambda t: np.zeros(3), action=lambda t: t % 2))
    assert shape_differences(features(arrays), plain) == {
        "observation.images.image": ("image (8, 8, 3)", "absent"),
        "observation.images.image2": ("image (8, 8, 3)", "absent"),
        "observation.state": ("float32 (8,)", "float32 (3,)"), "action": ("float32 (7,)", "float32 (1,)")}
