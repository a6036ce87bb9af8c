"""``recordSteps`` and ``/v1/evaluations/{id}/lerobot-dataset``: a CartPole evaluation run in-process keeps its steps,
exports through the real LeRobot writer (the lerobot venv) and loads back with ``LeRobotDataset``; the refusals
(still running, no steps kept, no lerobot venv, bad body, another organization, a viewer) are 4xx/503 envelopes."""

from __future__ import annotations

import io
import json
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings as django_settings

from evaluations.choices import EvaluationStatus
from evaluations.datasets import exports
from evaluations.models import DatasetExport, Organization
from evaluations.runs.steps import load_steps
from tests.conftest import cartpole_request
from tests.support.execution import create, episodes, run_all

pytestmark = pytest.mark.django_db

READER = Path(__file__).resolve().parents[1] / "support" / "read_lerobot_dataset.py"


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 10**9
    return settings.MEDIA_ROOT


def _recorded(tenant, record_steps="all", episodes_=2, max_steps=12):
    body = cartpole_request()
    body["tasks"][0].update(episodes=episodes_, maxSteps=max_steps, recordSteps=record_steps)
    evaluation = create(tenant, body)
    run_all(evaluation)
    return evaluation


def test_record_steps_keeps_every_observation_and_the_action_sent(tenant_a, media):
    evaluation = _recorded(tenant_a, record_steps="first:1")
    first, second = episodes(evaluation)
    assert first.steps_file and not second.steps_file and first.steps == 12  # first:1 keeps episode 0 only
    with first.steps_file.open("rb") as fh:
        arrays = load_steps(fh)
    assert arrays["obs/"].shape == (13, 4) and arrays["action"].shape == (12, 1)  # reset + 12 steps; 12 actions (an index Box)
    assert arrays["reward"].tolist() == [1.0] * 12 and arrays["truncated"][-1] and not arrays["terminated"].any()
    assert first.steps_meta["steps"] == 12 and first.steps_meta["fps"] == 50 and first.steps_meta["bytes"] > 0
    assert Organization.objects.get(pk=tenant_a.org.pk).storage_bytes == first.steps_meta["bytes"]
    assert evaluation.config["tasks"][0]["recordSteps"] == "first:1"


def test_a_bad_record_steps_mode_is_refused_at_its_path(api):
    body = cartpole_request()
    body["tasks"][0]["recordSteps"] = "everything"
    r = api.post("/v1/evaluations", body, format="json")
    assert r.status_code == 400
    assert r.json()["error"]["details"][0]["path"] == "tasks[0].recordSteps"


def test_an_evaluation_that_kept_no_steps_says_how_to_ask_for_them(tenant_a, api, media):
    evaluation = _recorded(tenant_a, record_steps="none", episodes_=1)
    r = api.post(f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset", {}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "steps_not_recorded"
    assert '"recordSteps": "all"' in r.json()["error"]["message"]
    assert api.get(f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset").status_code == 404


def test_a_running_evaluation_a_missing_venv_a_bad_body_a_viewer_and_another_org_are_refused(
        tenant_a, tenant_b, api, media, settings):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=3)
    url = f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset"
    assert api.post(url, {"images": "jpeg"}, format="json").json()["error"]["details"][0]["path"] == "images"
    assert tenant_a.client(tenant_a.viewer_key).post(url, {}, format="json").status_code == 403
    assert tenant_b.client(tenant_b.key).post(url, {}, format="json").status_code == 404
    assert tenant_b.client(tenant_b.key).get(url + ".zip").status_code == 404
    settings.RLMESH_PYTHON_ENVS = {**settings.RLMESH_PYTHON_ENVS, "lerobot": "/nonexistent/.venv-lerobot/bin/python"}
    r = api.post(url, {}, format="json")
    assert r.status_code == 503 and r.json()["error"]["code"] == "lerobot_unavailable"
    assert "scripts/setup-lerobot.sh" in r.json()["error"]["message"]
    type(evaluation).objects.filter(pk=evaluation.pk).update(status=EvaluationStatus.RUNNING)
    r = api.post(url, {}, format="json")
    assert r.status_code == 409 and "once it has ended" in r.json()["error"]["message"]
    assert not DatasetExport.objects.exists()


def _read(root: Path, repo_id: str, *indices: int) -> dict:
    python = django_settings.RLMESH_PYTHON_ENVS["lerobot"]
    proc = subprocess.run([python, str(READER), str(root), repo_id, *map(str, indices)], capture_output=True, text=True,
                          timeout=300, env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HOME": str(root.parent),
                                            "HF_LEROBOT_HOME": str(root.parent / "lerobot-home"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(600)
def test_an_export_loads_in_lerobot_with_a_frame_per_step_and_the_actions_sent(tenant_a, api, media, tmp_path):
    if exports.lerobot_python() is None:
        pytest.skip("the lerobot venv is not installed (scripts/setup-lerobot.sh)")
    evaluation = _recorded(tenant_a)
    url = f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset"
    r = api.post(url, format="json")  # an empty body
    assert r.status_code == 202 and r.json()["status"] == "queued", r.json()
    assert api.post(url, {}, format="json").status_code == 200  # the same export, not a second one
    assert api.get(url + ".zip").status_code == 409
    assert exports.build_export(r.json()["id"]) == "ready"
    doc = api.get(url).json()
    assert doc["status"] == "ready" and doc["episodes"] == 2 and doc["frames"] == 24 and doc["fps"] == 50, doc
    zipped = api.get(doc["downloadUrl"])
    assert zipped["Content-Type"] == "application/zip" and "attachment" in zipped["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(b"".join(zipped.streaming_content))) as archive:
        archive.extractall(tmp_path / "out")
    root = tmp_path / "out" / evaluation.public_id
    sidecar = json.loads((root / "meta" / "rlmesh.json").read_text())
    assert [e["success"] for e in sidecar["episodes"]] == [e.success for e in episodes(evaluation)]
    loaded = _read(root, doc["repoId"], 0, 13)
    assert loaded["frames"] == 24 and loaded["episodes"] == 2 and loaded["lengths"] == [12, 12]
    assert loaded["tasks"] == [episodes(evaluation)[0].workload.instruction or "classic/CartPole-v1"]
    with episodes(evaluation)[1].steps_file.open("rb") as fh:
        arrays = load_steps(fh)
    assert loaded["items"]["13"]["action"] == arrays["action"][1].astype(float).tolist()  # frame 1 of ep. 1
    assert np.allclose(loaded["items"]["13"]["state"], arrays["obs/"][1]) and loaded["items"]["13"]["episode"] == 1
    assert [loaded["items"][i]["done"] for i in ("0", "13")] == [False, False]


def test_record_steps_renders_libero_cameras_beside_the_observation_for_a_model_that_reads_none(tenant_a):
    def cameras(model="prebuilt/libero-expert", **task) -> tuple[str, str | None]:
        body = {"models": [model],
                "tasks": [{"env": "prebuilt/libero", "taskId": "libero_object/0", "episodes": 1, **task}]}
        kwargs = create(tenant_a, body).workloads.get().env_kwargs
        return kwargs.get("cameras"), kwargs.get("record_cameras")

    assert cameras() == ("none", None)  # the expert reads privileged state only
    # a dataset needs the images: rendered for the record, beside what the model sees (the same episode, digest)
    assert cameras(recordSteps="all") == ("none", "both")
    assert cameras(recordSteps="all", params={"cameras": "agentview"}) == ("agentview", "both")  # the task's choice
    assert cameras(recordSteps="all", params={"cameras": "both"}) == ("both", None)  # already in the observation


def test_a_new_ready_export_deletes_the_older_zip_of_its_images_and_gives_its_bytes_back(tenant_a, media):
    from django.core.files.base import ContentFile

    evaluation = _recorded(tenant_a, episodes_=1, max_steps=2)
    org = Organization.objects.get(pk=tenant_a.org.pk)
    before = org.storage_bytes
    old = DatasetExport.objects.create(evaluation=evaluation, status="ready", meta={"images": "image", "bytes": 5})
    old.file.save("old.zip", ContentFile(b"12345"))
    org.add_storage(5)
    exports._drop_older(DatasetExport.objects.create(evaluation=evaluation, status="ready", meta={"images": "video"}))
    old.refresh_from_db()
    assert old.file and list(media.rglob("old*.zip"))  # the newest of each images mode is kept
    exports._drop_older(DatasetExport.objects.create(evaluation=evaluation, status="ready", meta={"images": "image"}))
    old.refresh_from_db()
    assert not old.file and not list(media.rglob("old*.zip"))
    assert Organization.objects.get(pk=org.pk).storage_bytes == before


def test_a_steps_file_of_an_episode_another_delivery_recorded_is_deleted(tenant_a, media, monkeypatch):
    from evaluations.runs import loop

    written = []

    def already_recorded(**kwargs):  # as if a concurrent delivery had recorded this episode first
        written.append(kwargs["steps_file"])
        return False

    monkeypatch.setattr(loop, "record_episode", already_recorded)
    body = cartpole_request()
    body["tasks"][0].update(episodes=1, maxSteps=3, recordSteps="all")
    evaluation = create(tenant_a, body)
    loop.run_shard(evaluation.shards.get().pk)
    assert len(written) == 1 and written[0].startswith("steps/")
    assert not list(media.rglob("*.npz"))  # the copy is gone
