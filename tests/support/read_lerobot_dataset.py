"""Load a LeRobotDataset offline with lerobot's own reader and print what the tests compare, as one JSON line:
``{"frames", "episodes", "lengths", "tasks", "features", "items": {index: {"action", "state", "episode", "task",
"done", "success", "images": {key: sha256 of the uint8 HWC image}}}}``. Runs on the lerobot venv's interpreter:

    python tests/support/read_lerobot_dataset.py <root> <repo_id> [index ...]
"""

from __future__ import annotations

import hashlib
import json
import sys

from lerobot.datasets.lerobot_dataset import LeRobotDataset


def main(root: str, repo_id: str, *indices: str) -> None:
    # pyav decodes videos everywhere; lerobot's default, torchcodec, needs FFmpeg's shared libraries on the host.
    dataset = LeRobotDataset(repo_id, root=root, video_backend="pyav")
    lengths = [int(e["length"]) for e in dataset.meta.episodes]
    items = {}
    for index in map(int, indices):
        item = dataset[index]
        images = {}
        for key in dataset.meta.camera_keys:  # float32 CHW in [0, 1]: uint8 / 255
            hwc = (item[key] * 255).round().to(dtype=__import__("torch").uint8).permute(1, 2, 0).contiguous().numpy()
            images[key] = hashlib.sha256(hwc.tobytes()).hexdigest()
        # A (1,)-shaped feature is stored as a scalar column by LeRobot, and reads back as a 0-d tensor.
        items[index] = {"action": item["action"].reshape(-1).tolist(), "episode": int(item["episode_index"]), "task": item["task"],
                        "state": item["observation.state"].reshape(-1).tolist() if "observation.state" in item else None,
                        "done": bool(item["next.done"]), "success": bool(item["next.success"]), "images": images}
    print(json.dumps({"frames": dataset.num_frames, "episodes": dataset.num_episodes, "lengths": lengths,
                      "tasks": list(dataset.meta.tasks.index), "features": sorted(dataset.features), "items": items}))


if __name__ == "__main__":
    main(*sys.argv[1:])
