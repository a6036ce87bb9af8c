"""Tenant files under MEDIA_ROOT are for the service's user only: 0600 files in 0700 folders (0640/0750 with
RLMESH_MEDIA_GROUP_READABLE=True), whoever writes them — an import, a recording, an agent transcript and its
screenshots, a worker process — whatever the process umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.agents.test_agent_records import SECRET, _obs
from tests.conftest import cartpole_request
from tests.support.execution import create, episodes, run_all

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cartpole_result_bundle.zip"


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    old = os.umask(0o022)  # the usual umask: what left files 0644 in 0755 folders
    yield settings.MEDIA_ROOT
    os.umask(old)


def modes(root: Path) -> tuple[set[str], set[str], int]:
    """The octal modes of the files and of the folders under ``root`` (itself included), and how many files."""
    files = [p for p in root.rglob("*") if p.is_file()]
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    return ({oct(stat.S_IMODE(p.stat().st_mode)) for p in files}, {oct(stat.S_IMODE(p.stat().st_mode)) for p in folders},
            len(files))


def test_an_import_writes_owner_only_files_and_folders(api, media_root):
    r = api.post("/v1/evaluations/imports", {"bundle": SimpleUploadedFile("run.zip", FIXTURE.read_bytes())}, format="multipart")
    assert r.status_code == 201
    files, folders, count = modes(media_root)
    assert (files, folders) == ({"0o600"}, {"0o700"}) and count == 4


def test_a_recording_writes_owner_only_files_and_folders(tenant_a, media_root, settings):
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 10**9
    body = cartpole_request()
    body["tasks"][0].update(episodes=1, maxSteps=10, record="all")
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    assert [bool(e.video) for e in episodes(evaluation)] == [True]
    assert modes(media_root)[:2] == ({"0o600"}, {"0o700"})


def test_a_transcript_and_its_screenshots_are_owner_only(tenant_a, media_root, settings):
    from evaluations.planning.agent_runs import plan_agent_run
    from evaluations.runs import lifecycle
    from evaluations.runs.transcripts import TranscriptRecorder

    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    plan = plan_agent_run({"env_id": "miniwob", "model": "m", "task_ids": ["miniwob.click-test"],
                           "endpoint": {"url": "http://127.0.0.1:9", "key": SECRET}}, organization=tenant_a.org)
    evaluation = lifecycle.create_evaluation(plan=plan, raw_body="{}", organization=tenant_a.org)
    rec = TranscriptRecorder(evaluation=evaluation, workload=evaluation.workloads.get(), index=0, key=SECRET)
    rec.on_reset(_obs(0, shot=True), {}, seed=0)
    rec.finish({"status": "completed", "reward": 0.0, "success": False, "terminated": True, "seed": 0})
    files, folders, count = modes(media_root)
    assert (files, folders) == ({"0o600"}, {"0o700"}) and count == 2  # the transcript and one screenshot


def _in_a_fresh_process(tmp_path: Path, code: str, **env) -> str:
    """Run ``code`` after django.setup() in a new interpreter (as a worker or web process starts), umask 022."""
    prelude = ("import os; os.umask(0o022); os.environ['DJANGO_SETTINGS_MODULE'] = 'rlmesh_site.settings'\n"
               "import django; django.setup()\n")
    r = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "RLMESH_VAR_DIR": str(tmp_path), **env}, cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


STORE = ("from evaluations.runs.recording import store_video\n"
         "print(store_video('videos/eval_x/w000-ep00000.mp4', b'not really a video'))\n")


def test_a_worker_process_stores_owner_only_files(tmp_path):
    _in_a_fresh_process(tmp_path, STORE)
    files, folders, count = modes(tmp_path / "media")
    assert (files, folders) == ({"0o600"}, {"0o700"}) and count == 1


def test_group_readable_media_for_a_proxy_keep_the_root_s_set_group_id_bit(tmp_path):
    root = tmp_path / "media"
    root.mkdir(mode=0o755)
    root.chmod(0o2755)  # what an operator does once: chgrp <proxy group> media && chmod g+s media
    _in_a_fresh_process(tmp_path, STORE, RLMESH_MEDIA_GROUP_READABLE="True")
    assert stat.S_IMODE(root.stat().st_mode) == 0o2750
    files, folders, _ = modes(root)
    assert files == {"0o640"} and {m[-3:] for m in folders} == {"750"}


def test_an_existing_world_readable_media_root_is_narrowed_at_start(tmp_path):
    root = tmp_path / "media"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    _in_a_fresh_process(tmp_path, "pass")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
