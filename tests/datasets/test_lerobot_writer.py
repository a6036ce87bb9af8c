"""The LeRobot writer (evaluations.datasets.lerobot_writer on .venv-lerobot) on recorded steps made by hand:
LIBERO-shaped episodes with images, written as PNG frames (exact) and as videos (lossy, same frames), read back
by ``LeRobotDataset``; an episode whose features differ is refused in words."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from evaluations.datasets import exports
from evaluations.datasets.lerobot_frames import MappingProblem
from evaluations.runs.steps import StepRecorder
from tests.api.test_lerobot_dataset_api import _read

pytestmark = pytest.mark.skipif(exports.lerobot_python() is None, reason="run scripts/setup-lerobot.sh (make test does)")

SIDE = 64


def _episode(path, steps: int, seed: int, state_dim: int = 8) -> None:
    rng = np.random.default_rng(seed)
    recorder = StepRecorder(True)

    def obs(t):
        base = (np.arange(SIDE)[:, None, None] * 3 + t * 7 + seed * 40) % 256  # smooth gradients: video-friendly
        return {"agent_pos": rng.standard_normal(state_dim).astype(np.float32), "instruction": f"task {seed % 2}",
                "pixels": {"image": np.broadcast_to(base, (SIDE, SIDE, 3)).astype(np.uint8),
                           "image2": rng.integers(0, 255, (SIDE, SIDE, 3), dtype=np.uint8)}}

    recorder.reset(obs(0))
    for t in range(steps):
        recorder.step(rng.uniform(-1, 1, 7).astype(np.float32), obs(t + 1), 0.0, t == steps - 1, False,
                      {"success": float(t == steps - 1)})
    arrays, _ = recorder.arrays()
    np.savez_compressed(path, **arrays)


def _manifest(tmp_path, images: str, episodes: list[tuple[int, int]]) -> dict:
    files = []
    for steps, seed in episodes:
        path = tmp_path / f"e{seed}.npz"
        _episode(path, steps, seed, state_dim=8 if seed < 9 else 9)
        files.append({"file": str(path), "task": "fallback", "meta": {"seed": seed}})
    return {"root": str(tmp_path / "ds"), "repoId": "rlmesh/test", "fps": 20, "images": images, "robotType": None,
            "episodes": files, "extra": {}}


@pytest.mark.parametrize("images", ["image", "video"])
def test_written_episodes_load_back_frame_for_frame(tmp_path, images):
    manifest = _manifest(tmp_path, images, [(5, 0), (7, 1)])
    summary = exports._write(manifest, tmp_path)
    assert summary["episodes"] == 2 and summary["frames"] == 12
    assert summary["features"]["observation.images.image"]["dtype"] == images
    loaded = _read(tmp_path / "ds", "rlmesh/test", 6)  # frame 1 of episode 1
    assert loaded["lengths"] == [5, 7] and sorted(loaded["tasks"]) == ["task 0", "task 1"]
    with np.load(tmp_path / "e1.npz") as npz:
        assert loaded["items"]["6"]["action"] == npz["action"][1].tolist()
        expected = hashlib.sha256(npz["obs/pixels.image2"][1].tobytes()).hexdigest()
    same = loaded["items"]["6"]["images"]["observation.images.image2"] == expected
    assert same if images == "image" else not same  # PNG is exact; AV1 of noise is not


def test_episodes_with_different_features_are_refused_in_words(tmp_path):
    with pytest.raises(MappingProblem) as refused:
        exports._write(_manifest(tmp_path, "image", [(3, 0), (3, 9)]), tmp_path)  # state 8 then 9
    # The shapes, in the problem's own words: no library warning, no server path.
    assert str(refused.value) == ("episode 1 of task fallback is shaped differently from the first exported episode "
                                  "(observation.state: float32 (8,) vs float32 (9,)); one dataset holds one shape per "
                                  "feature")
