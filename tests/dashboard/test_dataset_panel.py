"""The Episodes tab's LeRobot dataset panel: shown only when an episode kept its steps, an export button for writers
once the evaluation ended, the download link when the export is ready (another organization's is a 404)."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile

from evaluations.choices import Role
from evaluations.models import DatasetExport
from tests.conftest import cartpole_request, make_user
from tests.support.execution import create, run_all

pytestmark = pytest.mark.django_db


@pytest.fixture
def web(client, tenant_a, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 10**9
    client.login(username=tenant_a.user.username, password=f"pw-{tenant_a.user.username}")
    return client


def _run(tenant, record_steps: str):
    body = cartpole_request()
    body["tasks"][0].update(episodes=1, maxSteps=5, recordSteps=record_steps)
    evaluation = create(tenant, body)
    run_all(evaluation)
    return evaluation


def test_no_panel_without_recorded_steps(web, tenant_a):
    evaluation = _run(tenant_a, "none")
    page = web.get(f"/evaluations/{evaluation.public_id}/episodes").content.decode()
    assert "dataset-panel" not in page


def test_export_button_then_download_link(web, tenant_a, tenant_b, client):
    evaluation = _run(tenant_a, "all")
    page = web.get(f"/evaluations/{evaluation.public_id}/episodes").content.decode()
    assert 'id="export-lerobot-dataset"' in page and "1 episode kept its steps" in page
    r = web.post(f"/evaluations/{evaluation.public_id}/lerobot-dataset/export", HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and 'id="dataset-building"' in r.content.decode() and 'hx-trigger="every 3s"' in r.content.decode()
    export = DatasetExport.objects.get(evaluation=evaluation)
    assert export.status == "queued" and export.meta == {"images": "image"}
    # As the worker leaves a built export (datasets.exports.build_export; tests/api and tests/datasets/test_libero_dataset.py
    # run the real one): a ready row and its zip in storage.
    export.file.save("x.zip", ContentFile(b"PK-zip-bytes"), save=False)
    DatasetExport.objects.filter(pk=export.pk).update(status="ready", file=export.file.name,
                                                      meta={"images": "image", "episodes": 1, "frames": 5, "fps": 50})
    panel = web.get(f"/evaluations/{evaluation.public_id}/lerobot-dataset").content.decode()
    assert 'id="download-lerobot-dataset"' in panel and "1 episodes, 5 frames at 50 fps" in panel
    r = web.get(f"/evaluations/{evaluation.public_id}/lerobot-dataset.zip")
    assert r.status_code == 200 and b"".join(r.streaming_content) == b"PK-zip-bytes"
    assert r["Content-Disposition"] == f'attachment; filename="{evaluation.public_id}-lerobot.zip"'
    other = make_user("bob-b", tenant_b.org, Role.OWNER)
    client.logout()
    client.login(username=other.username, password="pw-bob-b")
    assert client.get(f"/evaluations/{evaluation.public_id}/lerobot-dataset.zip").status_code == 404
    assert client.post(f"/evaluations/{evaluation.public_id}/lerobot-dataset/export").status_code == 404


def test_a_viewer_sees_no_button_and_cannot_export(web, tenant_a, client):
    evaluation = _run(tenant_a, "all")
    viewer = make_user("vera", tenant_a.org, Role.VIEWER)
    client.logout()
    client.login(username=viewer.username, password="pw-vera")
    page = client.get(f"/evaluations/{evaluation.public_id}/episodes").content.decode()
    assert "dataset-panel" in page and "export-lerobot-dataset" not in page
    assert client.post(f"/evaluations/{evaluation.public_id}/lerobot-dataset/export").status_code == 403
    assert not DatasetExport.objects.exists()


def test_the_ready_zip_stays_downloadable_while_a_newer_export_builds(web, tenant_a):
    evaluation = _run(tenant_a, "all")
    ready = DatasetExport.objects.create(evaluation=evaluation, status="ready",
                                         meta={"images": "video", "episodes": 1, "frames": 5, "fps": 50})
    ready.file.save("ready.zip", ContentFile(b"PK-ready"))
    DatasetExport.objects.create(evaluation=evaluation, status="running", meta={"images": "image"})  # the newest
    panel = web.get(f"/evaluations/{evaluation.public_id}/lerobot-dataset").content.decode()
    assert 'id="download-lerobot-dataset"' in panel and 'id="dataset-building"' in panel
    r = web.get(f"/evaluations/{evaluation.public_id}/lerobot-dataset.zip")
    assert r.status_code == 200 and b"".join(r.streaming_content) == b"PK-ready"
