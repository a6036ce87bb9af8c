"""The rules around ``/v1/evaluations/{id}/lerobot-dataset`` without building a dataset (a stand-in lerobot venv,
the writer run only as a fake interpreter script): one build per evaluation, a ready zip served while another mode
builds, a per-organization bound, tasks of different feature shapes refused at the request, writer failures told
without the server's paths or library warnings, and a venv counted as installed only with its install stamp."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

from evaluations.datasets import exports
from evaluations.datasets.lerobot_frames import MappingProblem
from evaluations.models import DatasetExport
from evaluations.runtime.base import RuntimeBackendError
from evaluations.runtime.local import interpreter_for
from tests.api.test_lerobot_dataset_api import _recorded, media  # noqa: F401 (fixture)
from tests.conftest import cartpole_request
from tests.support.execution import create, run_all

pytestmark = pytest.mark.django_db


def _venv(tmp_path, settings, python_text: str | None = None, stamped: bool = True):
    """A lerobot venv folder: ``bin/python`` (this interpreter, or a script of ``python_text``) and its stamp."""
    venv = tmp_path / ".venv-lerobot"  # our scripts' folder name: its stamp decides
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    if python_text is None:
        python.symlink_to(sys.executable)
    else:
        python.write_text(python_text)
        python.chmod(0o755)
    if stamped:
        (venv / ".installed").write_text("lerobot==0.4.4\n")
    settings.RLMESH_PYTHON_ENVS = {**settings.RLMESH_PYTHON_ENVS, "lerobot": str(python)}
    return venv


@pytest.fixture
def lerobot_venv(tmp_path, settings):
    return _venv(tmp_path, settings)


def test_one_export_is_built_at_a_time_and_another_images_is_refused_naming_it(tenant_a, api, media, lerobot_venv):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=3)
    url = f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset"
    first = api.post(url, {"images": "video"}, format="json")
    assert first.status_code == 202
    for images in ("image", "image", "video", "image"):
        r = api.post(url, {"images": images}, format="json")
        if images == "video":
            assert r.status_code == 200 and r.json()["id"] == first.json()["id"]  # the one under way
        else:
            error = r.json()["error"]
            assert r.status_code == 409 and error["code"] == "export_running", r.json()
            assert error["details"][0]["id"] == first.json()["id"] and error["details"][0]["status"] == "queued"
    assert DatasetExport.objects.count() == 1


def test_a_ready_zip_stays_downloadable_while_another_images_builds_and_is_not_rebuilt(tenant_a, api, media,
                                                                                        lerobot_venv):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=3)
    url = f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset"
    ready = DatasetExport.objects.create(evaluation=evaluation, status="ready", meta={"images": "image", "bytes": 3},
                                         finished_at=timezone.now())
    ready.file.save("ready.zip", ContentFile(b"zip"))
    building = api.post(url, {"images": "video"}, format="json")
    assert building.status_code == 202 and building.json()["id"] != ready.pk
    zipped = api.get(url + ".zip")
    assert zipped.status_code == 200 and b"".join(zipped.streaming_content) == b"zip"
    assert api.get(url + ".zip?images=image").status_code == 200
    assert api.get(url + ".zip?images=video").json()["error"]["message"].startswith("the dataset export is queued")
    assert api.get(url + ".zip?images=png").status_code == 400
    DatasetExport.objects.filter(pk=building.json()["id"]).update(status="failed", error="x")
    again = api.post(url, {"images": "image"}, format="json")  # the ready one, not a rebuild
    assert again.status_code == 200 and again.json()["id"] == ready.pk
    assert again.json()["downloadUrl"].endswith(".zip?images=image")


def test_an_organization_builds_at_most_its_bound_of_exports_at_once(tenant_a, tenant_b, api, media, settings,
                                                                       lerobot_venv):
    settings.RLMESH_ORG_DATASET_EXPORTS_BUILDING = 1
    one, two = (_recorded(tenant_a, episodes_=1, max_steps=2) for _ in range(2))
    lost = DatasetExport.objects.create(evaluation=two, status="running", meta={"images": "video"},
                                        created_at=timezone.now() - timedelta(hours=3),
                                        started_at=timezone.now() - timedelta(hours=3))
    assert api.post(f"/v1/evaluations/{one.public_id}/lerobot-dataset", {}, format="json").status_code == 202
    r = api.post(f"/v1/evaluations/{two.public_id}/lerobot-dataset", {}, format="json")
    assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_exports", r.json()
    assert "RLMESH_ORG_DATASET_EXPORTS_BUILDING" in r.json()["error"]["message"]
    other = _recorded(tenant_b, episodes_=1, max_steps=2)  # another organization's bound is its own
    assert tenant_b.client(tenant_b.key).post(f"/v1/evaluations/{other.public_id}/lerobot-dataset", {},
                                              format="json").status_code == 202
    DatasetExport.objects.filter(evaluation=one).update(status="ready")
    assert api.post(f"/v1/evaluations/{two.public_id}/lerobot-dataset", {}, format="json").status_code == 202
    assert lost.pk < DatasetExport.objects.filter(evaluation=two).latest("id").pk  # a lost build counted for nothing


def test_tasks_of_differently_shaped_features_are_refused_at_the_request_with_their_shapes(tenant_a, api, media,
                                                                                            lerobot_venv):
    body = cartpole_request()
    body["tasks"] = [{"env": "prebuilt/classic-control", "taskId": task, "episodes": 1, "maxSteps": 3,
                      "recordSteps": "all"} for task in ("classic/CartPole-v1", "classic/Pendulum-v1")]
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    r = api.post(f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset", {}, format="json")
    error = r.json()["error"]
    assert r.status_code == 409 and error["code"] == "features_differ", r.json()
    state = next(d for d in error["details"] if d["path"] == "observation.state")
    assert state["message"] == ("tasks[0] (prebuilt/classic-control classic/CartPole-v1): float32 (4,); "
                                "tasks[1] (prebuilt/classic-control classic/Pendulum-v1): float32 (3,)")
    assert "float32 (4,)" in error["message"] and "Pendulum" in error["message"]
    assert not DatasetExport.objects.exists()


CRASH = """#!/bin/sh
echo "/srv/rlmesh/.venv-lerobot/lib/python3.11/site-packages/lerobot/stats.py:40: RuntimeWarning: invalid value" >&2
echo "Traceback (most recent call last):" >&2
echo '  File "/srv/rlmesh/evaluations/datasets/lerobot_writer.py", line 22, in <module>' >&2
echo "ModuleNotFoundError: No module named 'numpy'" >&2
exit 1
"""
PROBLEM = """#!/bin/sh
echo "/srv/rlmesh/.venv-lerobot/lib/python3.11/site-packages/lerobot/x.py:1: RuntimeWarning: careful" >&2
echo '{"problem": "episode 0 of task t is shaped differently (observation.state: float32 (4,) vs float32 (3,))"}'
exit 2
"""


def test_a_crashed_writer_is_told_without_server_paths_or_warnings(tmp_path, settings):
    _venv(tmp_path, settings, CRASH)
    with pytest.raises(RuntimeError) as crashed:
        exports._write({"episodes": []}, tmp_path)
    message = str(crashed.value)
    assert "ModuleNotFoundError: No module named 'numpy'" in message
    assert "/srv" not in message and "Warning" not in message and "Traceback" not in message


def test_a_writer_problem_is_its_own_words_only(tmp_path, settings):
    _venv(tmp_path, settings, PROBLEM)
    with pytest.raises(MappingProblem) as refused:
        exports._write({"episodes": []}, tmp_path)
    assert str(refused.value) == "episode 0 of task t is shaped differently (observation.state: float32 (4,) vs " \
                                 "float32 (3,))"


def test_a_failed_build_records_no_server_paths(tenant_a, media, tmp_path, settings):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=2)
    _venv(tmp_path, settings, CRASH)
    export = DatasetExport.objects.create(evaluation=evaluation, meta={"images": "image"})
    assert exports.build_export(export.pk) == "failed"
    export.refresh_from_db()
    assert "No module named 'numpy'" in export.error and "/" not in export.error.replace("<path>", "")


def test_a_lerobot_venv_without_its_install_stamp_is_not_installed(tenant_a, api, media, tmp_path, settings):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=2)
    venv = _venv(tmp_path, settings, stamped=False)  # bin/python there, the install still running
    url = f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset"
    r = api.post(url, {}, format="json")
    assert r.status_code == 503 and r.json()["error"]["code"] == "lerobot_unavailable"
    with pytest.raises(RuntimeBackendError, match="not installed"):
        interpreter_for("python+lerobot://evaluations.prebuilt.lerobot.smolvla:SmolVLALibero")
    (venv / ".installed").write_text("lerobot==0.4.4\n")  # scripts/venv-lib.sh writes it last
    assert interpreter_for("python+lerobot://m:T") == (str(venv / "bin" / "python"), "m:T")
    assert api.post(url, {}, format="json").status_code == 202
    # an interpreter the operator names outside a .venv-<name> folder only has to exist
    other = tmp_path / "lerobot-env" / "bin"
    other.mkdir(parents=True)
    (other / "python").symlink_to(sys.executable)
    settings.RLMESH_PYTHON_ENVS = {**settings.RLMESH_PYTHON_ENVS, "lerobot": str(other / "python")}
    assert interpreter_for("python+lerobot://m:T") == (str(other / "python"), "m:T")
