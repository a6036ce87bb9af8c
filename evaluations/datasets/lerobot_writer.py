"""Write recorded episodes as a LeRobotDataset with LeRobot's own writer. Runs on the lerobot venv's interpreter
(``settings.RLMESH_PYTHON_ENVS["lerobot"]``, lerobot 0.4.4), started by :mod:`evaluations.datasets.exports`::

    python -m evaluations.datasets.lerobot_writer manifest.json

The manifest (JSON) names ``root`` (an empty folder to write the dataset into), ``repoId``, ``fps``, ``images``
(``image``: PNG frames inside the parquet files, exact; ``video``: AV1 videos, lossy), ``robotType`` (or null),
``episodes`` (``[{"file": path of a recorded .npz, "task": fallback task text, "meta": {...}}]``, in dataset order)
and ``extra`` (written to ``meta/rlmesh.json`` with each exported episode's ``meta`` and ``episodeIndex``).

``LeRobotDataset.create`` → ``add_frame`` per frame (:func:`evaluations.datasets.lerobot_frames.frames`) →
``save_episode`` per episode → ``finalize``. Nothing touches the Hugging Face Hub: the dataset is local (``root``),
never pushed, and the caller sets ``HF_HUB_OFFLINE``. Prints one JSON line: ``{"episodes", "frames", "features",
"skipped", "lerobotVersion"}``; exits 2 with ``{"problem": words for the user}`` as that line when the episodes make
no dataset (stdout, so the libraries' warnings on stderr never reach the user).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from .lerobot_frames import MappingProblem, features, frames, shape_differences

SIDECAR = "meta/rlmesh.json"


def _load(path: str) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        return {key: npz[key] for key in npz.files}


def write(manifest: dict) -> dict:
    """Write the dataset the manifest describes (module docstring); return the summary. Raises MappingProblem when
    an episode's features differ from the first's or no episode has a step."""
    import lerobot
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset, spec, exported, skipped, total = None, None, [], [], 0
    for episode in manifest["episodes"]:
        arrays = _load(episode["file"])
        if len(arrays["reward"]) == 0:
            skipped.append({**episode["meta"], "reason": "no steps"})
            continue
        own = features(arrays, images=manifest["images"])
        if spec is None:
            spec = own
            dataset = LeRobotDataset.create(
                repo_id=manifest["repoId"], fps=int(manifest["fps"]), features=spec, root=manifest["root"],
                robot_type=manifest.get("robotType"), use_videos=manifest["images"] == "video", image_writer_threads=2,
            )
        elif differ := shape_differences(spec, own):
            shapes = "; ".join(f"{k}: {first} vs {this}" for k, (first, this) in differ.items())
            meta = episode["meta"]
            where = (f"episode {meta.get('index', len(exported) + len(skipped))} of task "
                     f"{meta.get('taskId') or episode['task']}")
            raise MappingProblem(f"{where} is shaped differently from the first exported episode ({shapes}); one "
                                 "dataset holds one shape per feature")
        for frame in frames(arrays, episode["task"]):
            dataset.add_frame(frame)
        dataset.save_episode()
        exported.append({**episode["meta"], "episodeIndex": len(exported), "frames": len(arrays["reward"])})
        total += len(arrays["reward"])
    if dataset is None:
        raise MappingProblem("no recorded episode has a step")
    dataset.finalize()
    dataset.stop_image_writer()
    sidecar = Path(manifest["root"]) / SIDECAR
    sidecar.write_text(json.dumps({**manifest.get("extra", {}), "episodes": exported, "skipped": skipped}, indent=1))
    return {"episodes": len(exported), "frames": total, "skipped": len(skipped), "lerobotVersion": lerobot.__version__,
            "features": {k: {"dtype": v["dtype"], "shape": list(v["shape"])} for k, v in spec.items()}}


def main(argv: list[str]) -> int:
    manifest = json.loads(Path(argv[1]).read_text())
    try:
        summary = write(manifest)
    except MappingProblem as exc:
        print(json.dumps({"problem": str(exc)}))
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
