"""The privileged LIBERO expert as a demonstration source: an expert run of 2 tasks × 3 episodes with
``recordSteps: all``, run by the shard loop in-process (env and model servers in .venv-libero), exported by the real
LeRobot writer (.venv-lerobot) and loaded offline with ``LeRobotDataset``: one frame per step, the instruction as the
task, the actions sent and both cameras' images exactly as recorded, success per episode."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest

from evaluations.datasets import exports
from evaluations.runs.steps import load_steps
from tests.api.test_lerobot_dataset_api import _read
from tests.support.execution import create, episodes, run_all
from tests.support.libero import LIBERO_PYTHON

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.django_db]

#: The expert's shortest libero_object tasks (87 and 94 mean steps, 50/50 each: docs/using/libero-expert.md).
TASKS = ("libero_object/9", "libero_object/2")


def _sha(image) -> str:
    return hashlib.sha256(image.tobytes()).hexdigest()


def _recording_changes_nothing(tenant_a, recorded) -> None:
    """One episode, one digest (issue 33): the first task's episodes run unrecorded give the recorded ones' digests,
    and an episode whose cameras are in the observation records the same images as the ones rendered beside it."""
    plain = create(tenant_a, {"models": ["prebuilt/libero-expert"], "tasks": [
        {"env": "prebuilt/libero", "taskId": TASKS[0], "episodes": 3, "seed": 0}]})
    run_all(plain)
    assert [e.trajectory_digest for e in episodes(plain)] == [e.trajectory_digest for e in recorded]
    assert all(e.digest_comparable for e in recorded)
    seen = create(tenant_a, {"models": ["prebuilt/libero-expert"], "tasks": [
        {"env": "prebuilt/libero", "taskId": TASKS[0], "episodes": 1, "seed": 0, "recordSteps": "all", "maxSteps": 6,
         "params": {"cameras": "both"}}]})
    run_all(seen)
    (in_obs,) = episodes(seen)
    with in_obs.steps_file.open("rb") as a, recorded[0].steps_file.open("rb") as b:
        observed, beside = load_steps(a), load_steps(b)
    for key in ("obs/pixels.image", "obs/pixels.image2"):
        assert observed[key].shape == (7, 256, 256, 3) and [_sha(x) for x in observed[key]] == [
            _sha(x) for x in beside[key][:7]], key


@pytest.mark.timeout(1500)  # 6 rendered expert episodes, the export (~0.2 s a frame), the load: minutes
def test_an_expert_run_exports_as_a_lerobot_dataset_that_round_trips(tenant_a, api, settings, tmp_path):
    if not LIBERO_PYTHON.exists() or exports.lerobot_python() is None:
        pytest.fail("the LIBERO and lerobot venvs are needed: scripts/setup-libero.sh, scripts/setup-lerobot.sh")
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 10**10
    body = {"models": ["prebuilt/libero-expert"],
            "tasks": [{"env": "prebuilt/libero", "taskId": t, "episodes": 3, "seed": 0, "recordSteps": "all"} for t in TASKS]}
    evaluation = create(tenant_a, body)
    # the expert reads no camera: they are rendered for the record only, beside what it sees
    assert {(w.env_kwargs["cameras"], w.env_kwargs["record_cameras"]) for w in evaluation.workloads.all()} == {
        ("none", "both")}
    run_all(evaluation)
    rows = episodes(evaluation)
    assert evaluation.status == "completed" and len(rows) == 6 and all(e.steps_file for e in rows), evaluation.error_message
    _recording_changes_nothing(tenant_a, rows[:3])

    url = f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset"
    export_id = api.post(url, {}, format="json").json()["id"]
    assert exports.build_export(export_id) == "ready", api.get(url).json()
    doc = api.get(url).json()
    with zipfile.ZipFile(io.BytesIO(b"".join(api.get(doc["downloadUrl"]).streaming_content))) as archive:
        archive.extractall(tmp_path / "out")
    root = tmp_path / "out" / evaluation.public_id

    starts = [sum(e.steps for e in rows[:i]) for i in range(len(rows))]
    probe = [starts[0], starts[4] + rows[4].steps // 2, starts[5] + rows[5].steps - 1]  # first, a middle, the last
    loaded = _read(root, doc["repoId"], *probe)
    assert loaded["lengths"] == [e.steps for e in rows] and loaded["frames"] == sum(e.steps for e in rows)
    assert loaded["tasks"] == [w.instruction for w in evaluation.workloads.order_by("index")]
    assert {"observation.images.image", "observation.images.image2", "observation.state", "action"} <= set(loaded["features"])
    for frame, index in zip(probe, (0, 4, 5)):
        episode = rows[index]
        with episode.steps_file.open("rb") as fh:
            arrays = load_steps(fh)
        t = frame - starts[index]
        item = loaded["items"][str(frame)]
        assert item["episode"] == index and item["task"] == episode.workload.instruction
        assert item["action"] == arrays["action"][t].tolist()  # float32 both sides: exact
        assert item["state"] == arrays["obs/agent_pos"][t].tolist()
        assert item["images"] == {"observation.images.image": _sha(arrays["obs/pixels.image"][t]),
                                  "observation.images.image2": _sha(arrays["obs/pixels.image2"][t])}
    assert loaded["items"][str(probe[-1])]["done"] and loaded["items"][str(probe[-1])]["success"] == rows[5].success
    sidecar = json.loads((root / "meta" / "rlmesh.json").read_text())
    assert [(e["taskId"], e["seed"], e["success"]) for e in sidecar["episodes"]] == [
        (e.workload.task_id, e.seed, e.success) for e in rows]
    print("EXPORT", json.dumps({k: doc[k] for k in ("episodes", "frames", "bytes", "buildSeconds")}),
          "successes", sum(bool(e.success) for e in rows), "steps", [e.steps for e in rows])
