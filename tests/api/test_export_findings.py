"""The dataset export and downloads, as a break-it pass found them (issue 33): every oversized body is a 413, never a
500; a download goes out whatever ``Accept`` asks for; a ready zip answers while another mode builds; the refusals say
what happened (quota, an imported run) without the server's paths; a corrupt steps file fails the build naming the
episode; an organization over its quota is refused up front; a lost build is failed and its scratch folder removed;
the site builds a bounded number of exports at once."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

from evaluations.datasets import exports
from evaluations.models import DatasetExport, Episode, Organization
from evaluations import dispatch
from tests.api.test_lerobot_dataset_api import _recorded, media  # noqa: F401 (fixture)
from tests.api.test_lerobot_export_rules import lerobot_venv  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

OVER = 1_100_000  # bytes: past DATA_UPLOAD_MAX_MEMORY_SIZE (1 MiB)


def _url(evaluation) -> str:
    return f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset"


def test_a_body_over_the_limit_is_a_413_on_every_operation_that_takes_one(tenant_a, api, media):
    """A field case (the export's POST read its body before the size check: a 500) fixes a kind: every POST, PUT and
    PATCH of the schema, given a body over the limit, answers 4xx in the envelope."""
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=2)
    body = json.dumps({"images": "image", "pad": "x" * OVER})
    r = api.post(_url(evaluation), body, content_type="application/json")
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large", r.content[:300]
    assert not DatasetExport.objects.exists()
    schema = api.get("/v1/schema", HTTP_ACCEPT="application/json").json()
    ids = {"public_id": evaluation.public_id, "run_id": str(evaluation.run_id), "evaluation_id": evaluation.public_id}
    checked = 0
    for path, operations in schema["paths"].items():
        for method in ("post", "put", "patch"):
            if method not in operations:
                continue
            url = path
            for name, value in ids.items():
                url = url.replace("{" + name + "}", value)
            url = url.replace("{id}", "1").replace("{episode_id}", "1").replace("{tag}", "team:a")
            r = getattr(api, method)(url, body, content_type="application/json")
            assert 400 <= r.status_code < 500, (method, url, r.status_code, r.content[:200])
            if "requestBody" in operations[method] and r.status_code not in (401, 403, 404):  # the ones that read it
                assert r.json()["error"]["code"] in ("payload_too_large", "unsupported_media_type"), (url, r.content)
            checked += 1
    assert checked >= 8


@pytest.mark.parametrize("accept", ["application/zip", "application/octet-stream", "video/mp4", "*/*"])
def test_downloads_go_out_whatever_accept_asks_for(tenant_a, api, media, accept):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=2)
    ready = DatasetExport.objects.create(evaluation=evaluation, status="ready", meta={"images": "image", "bytes": 3})
    ready.file.save("ready.zip", ContentFile(b"zip"))
    zipped = api.get(_url(evaluation) + ".zip", HTTP_ACCEPT=accept)
    assert zipped.status_code == 200 and b"".join(zipped.streaming_content) == b"zip", zipped.content[:200]
    episode = Episode.objects.filter(evaluation=evaluation).first()
    episode.video.save("v.mp4", ContentFile(b"mp4-bytes"))
    video = api.get(f"/v1/evaluations/{evaluation.public_id}/episodes/{episode.pk}/video", HTTP_ACCEPT=accept)
    assert video.status_code == 200 and b"".join(video.streaming_content) == b"mp4-bytes"
    missing = api.get(f"/v1/evaluations/{evaluation.public_id}/episodes/999999/video", HTTP_ACCEPT=accept)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"  # errors stay the envelope


def test_an_agent_runs_output_goes_out_whatever_accept_asks_for(tenant_a, api):
    from tests.support.execution import create

    evaluation = create(tenant_a, {"models": ["prebuilt/random"], "tasks": [
        {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 1}]})
    for accept in ("application/zip", "application/octet-stream"):
        r = api.get(f"/agents/outputs/runs/{evaluation.run_id}", HTTP_ACCEPT=accept)
        assert r.status_code in (200, 404), r.content[:200]
        assert r.status_code != 406


def test_a_ready_zip_answers_while_an_export_of_other_images_builds(tenant_a, api, media, lerobot_venv):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=3)
    ready = DatasetExport.objects.create(evaluation=evaluation, status="ready", meta={"images": "image", "bytes": 3},
                                         finished_at=timezone.now())
    ready.file.save("ready.zip", ContentFile(b"zip"))
    assert api.post(_url(evaluation), {"images": "video"}, format="json").status_code == 202
    again = api.post(_url(evaluation), {"images": "image"}, format="json")
    assert again.status_code == 200 and again.json()["id"] == ready.pk, again.json()


def test_steps_dropped_for_the_quota_are_not_told_to_resubmit_with_record_steps(tenant_a, api, media, lerobot_venv):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=3)
    Episode.objects.filter(evaluation=evaluation).update(steps_file="", steps_meta={
        "error": "not stored: the organization's storage quota is used up (RLMESH_ORG_STORAGE_QUOTA_BYTES)"})
    error = api.post(_url(evaluation), {}, format="json").json()["error"]
    assert error["code"] == "steps_not_recorded" and "storage quota" in error["message"], error
    assert "submit it again with" not in error["message"] and error["details"][0]["path"] == "recordSteps"


def test_an_imported_evaluation_is_told_it_carries_no_steps(tenant_a, api, media, lerobot_venv):
    from tests.api.test_imports_api import FIXTURE, upload

    imported = upload(api, FIXTURE.read_bytes()).json()["id"]
    error = api.post(f"/v1/evaluations/{imported}/lerobot-dataset", {}, format="json").json()["error"]
    assert error["code"] == "steps_not_recorded" and "imported" in error["message"], error
    assert "submit it again" not in error["message"]


def test_an_organization_over_its_quota_is_refused_before_any_build(tenant_a, api, media, lerobot_venv, settings):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=3)
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = Organization.objects.get(pk=tenant_a.org.pk).storage_bytes - 1
    r = api.post(_url(evaluation), {}, format="json")
    assert r.status_code == 413 and r.json()["error"]["code"] == "storage_quota_exceeded", r.json()
    assert not DatasetExport.objects.exists()


def test_the_unavailable_message_names_no_server_path(tenant_a, api, media, settings):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=2)
    settings.RLMESH_PYTHON_ENVS = {**settings.RLMESH_PYTHON_ENVS, "lerobot": "/srv/secret/place/.venv-lerobot/bin/python"}
    error = api.post(_url(evaluation), {}, format="json").json()["error"]
    assert error["code"] == "lerobot_unavailable" and "/srv" not in error["message"] and "secret" not in error["message"]
    assert ".venv-lerobot" in error["message"] and "scripts/setup-lerobot.sh" in error["message"]


def test_a_corrupt_steps_file_fails_the_build_naming_the_episode(tenant_a, api, media, lerobot_venv):
    evaluation = _recorded(tenant_a, episodes_=2, max_steps=3)
    _first, second = Episode.objects.filter(evaluation=evaluation).order_by("index")
    path = Path(second.steps_file.path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # cut in half
    r = api.post(_url(evaluation), {}, format="json")
    assert r.status_code == 202, r.content[:300]
    assert exports.build_export(r.json()["id"]) == "failed"
    doc = api.get(_url(evaluation)).json()
    assert doc["status"] == "failed" and "episode 1 of tasks[0]" in doc["error"] and f"id {second.pk}" in doc["error"]
    assert str(media) not in doc["error"]


def test_a_bad_zip_header_is_a_value_error_as_documented():
    from evaluations.datasets.lerobot_frames import check_steps_file, header_arrays

    with tempfile.NamedTemporaryFile(suffix=".npz") as fh:
        fh.write(b"PK\x03\x04 not a zip at all")
        fh.flush()
        with pytest.raises(ValueError):
            header_arrays(fh.name)
        with pytest.raises(ValueError):
            check_steps_file(fh.name)


def test_a_lost_export_is_failed_and_its_scratch_folder_removed(tenant_a, media, settings):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=2)
    export = DatasetExport.objects.create(evaluation=evaluation, status="running", started_at=timezone.now(),
                                          meta={"images": "image", "worker": f"{settings.RLMESH_HOSTNAME}:999999999"})
    alive = DatasetExport.objects.create(evaluation=_recorded(tenant_a, episodes_=1, max_steps=2), status="running",
                                         started_at=timezone.now(),
                                         meta={"images": "image", "worker": f"{settings.RLMESH_HOSTNAME}:{os.getpid()}"})
    scratch = Path(tempfile.mkdtemp(prefix=f"{exports.WORK_PREFIX}{export.pk}-", dir=exports.scratch_root()))
    kept = Path(tempfile.mkdtemp(prefix=f"{exports.WORK_PREFIX}{alive.pk}-", dir=exports.scratch_root()))
    elsewhere = Path(tempfile.mkdtemp(prefix=f"{exports.WORK_PREFIX}{export.pk}-"))  # the system's temp dir: another
    # platform's (or a test run's beside this one) is never swept
    (scratch / "steps").mkdir()
    try:
        assert exports.reap_lost_exports(live={f"{settings.RLMESH_HOSTNAME}:{os.getpid()}"}) == [export.pk]
        export.refresh_from_db()
        assert export.status == "failed" and "999999999" in export.error and "ask again" in export.error
        assert not scratch.exists() and kept.exists() and elsewhere.exists()
        alive.refresh_from_db()
        assert alive.status == "running"
    finally:
        for folder in (scratch, kept, elsewhere):
            if folder.exists():
                folder.rmdir()


def test_the_site_builds_a_bounded_number_of_exports_and_the_others_wait(tenant_a, media, settings, monkeypatch,
                                                                          lerobot_venv, django_capture_on_commit_callbacks):
    settings.RLMESH_DATASET_EXPORTS_RUNNING = 1
    sent = []
    monkeypatch.setattr(dispatch, "_send", lambda name, *args, countdown=None: sent.append((name, args, countdown)))
    building = DatasetExport.objects.create(evaluation=_recorded(tenant_a, episodes_=1, max_steps=2), status="running",
                                            started_at=timezone.now(), meta={"images": "image"})
    waiting = DatasetExport.objects.create(evaluation=_recorded(tenant_a, episodes_=1, max_steps=2),
                                           meta={"images": "image"})
    with pytest.MonkeyPatch.context() as m, django_capture_on_commit_callbacks(execute=True):
        m.setattr(exports, "_write", lambda *a: pytest.fail("a second build ran past the site's bound"))
        assert exports.build_export(waiting.pk) == "queued"
    assert sent == [(dispatch.BUILD_DATASET_EXPORT, (waiting.pk,), settings.RLMESH_DATASET_EXPORT_RETRY_SECONDS)]
    waiting.refresh_from_db()
    assert waiting.status == "queued" and waiting.started_at is None and "build slot" in waiting.meta["waiting"]
    assert exports.export_document(waiting)["waiting"].startswith("for a build slot")
    building.status = "ready"
    building.save()
    assert exports.build_export(waiting.pk) in ("ready", "failed")  # the slot is free: it builds


def test_the_schema_documents_the_zip_images_parameter_and_the_posts_413(api):
    schema = api.get("/v1/schema", HTTP_ACCEPT="application/json").json()
    zipped = schema["paths"]["/v1/evaluations/{public_id}/lerobot-dataset.zip"]["get"]
    images = next(p for p in zipped["parameters"] if p["name"] == "images")
    assert images["in"] == "query" and set(images["schema"]["enum"]) == {"image", "video"}
    assert "413" in schema["paths"]["/v1/evaluations/{public_id}/lerobot-dataset"]["post"]["responses"]
