"""What an episode's recording may hold and store (issue 33): its video frames and recorded steps share one memory
budget (``RLMESH_RECORD_MAX_BYTES``) and one figure of the quota left, the recording stops (and says so on the
episode) while the episode counts; every size parameter of the catalog's envs is bounded at the preview; an imported
episode's digest is comparable as the env says, not as the bundle does."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from django.urls import reverse

from evaluations.models import Episode, Organization
from evaluations.runs.recording import RecordBudget, frame_from, record_images
from evaluations.runs.steps import StepRecorder
from tests.conftest import cartpole_request
from tests.support.execution import create, episodes, run_all

pytestmark = pytest.mark.django_db


def _run(tenant, settings, *, record="all", record_steps="all", steps=20, episodes_=1):
    body = cartpole_request()
    body["tasks"][0].update(episodes=episodes_, maxSteps=steps, record=record, recordSteps=record_steps)
    evaluation = create(tenant, body)
    run_all(evaluation)
    return evaluation


def test_a_recording_past_its_memory_budget_stops_says_where_and_the_episode_counts(tenant_a, settings, api, client):
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 10**9
    frame = 400 * 600 * 3  # a CartPole frame
    settings.RLMESH_RECORD_MAX_BYTES = 5 * frame + 2_000  # about five frames and a few steps
    evaluation = _run(tenant_a, settings)
    (episode,) = episodes(evaluation)
    assert episode.status == "completed" and episode.steps == 20 and episode.success is not None
    assert not episode.steps_file and "RLMESH_RECORD_MAX_BYTES" in episode.steps_meta["error"]
    stopped = episode.steps_meta["stoppedAtStep"]
    assert 0 < stopped < 20
    assert episode.video and episode.video_meta["stoppedAtStep"] == stopped and episode.video_meta["frames"] == stopped
    assert f"the video ends at step {stopped}" in episode.video_meta["note"]
    doc = api.get(f"/v1/evaluations/{evaluation.public_id}/episodes").json()["items"][0]
    assert doc["recording"]["steps"] == {"stored": False, "bytes": None, "steps": None,
                                         "error": episode.steps_meta["error"], "stoppedAtStep": stopped}
    assert doc["recording"]["video"]["stored"] is True and doc["recording"]["video"]["stoppedAtStep"] == stopped
    client.force_login(tenant_a.user)
    page = client.get(reverse("evaluations:evaluation_tab", args=[evaluation.public_id, "episodes"])).content.decode()
    assert f"the video ends at step {stopped}" in page and "steps not stored" in page
    settings.RLMESH_RECORD_MAX_BYTES = 10**9
    whole = episodes(_run(tenant_a, settings))[0]
    assert whole.steps_file and whole.video_meta["frames"] == 21 and "stoppedAtStep" not in whole.steps_meta
    assert whole.trajectory_digest == episode.trajectory_digest  # recording, stopped or not, changes nothing run


def test_the_video_and_the_steps_of_an_episode_never_pass_the_quota_together(tenant_a, settings):
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 10**9
    first = episodes(_run(tenant_a, settings))[0]
    video, steps = first.video_meta["bytes"], first.steps_meta["bytes"]
    used = Organization.objects.get(pk=tenant_a.org.pk).storage_bytes
    assert used == video + steps
    # room for the next video or its steps alone, not both (each used to be checked against the same figure)
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = used + max(video, steps) + min(video, steps) // 2
    second = episodes(_run(tenant_a, settings))[0]
    assert bool(second.video) != bool(second.steps_file), (second.video_meta, second.steps_meta)
    assert Organization.objects.get(pk=tenant_a.org.pk).storage_bytes <= settings.RLMESH_ORG_STORAGE_QUOTA_BYTES


def test_an_organization_with_no_quota_left_renders_nothing_for_the_record(tenant_a, settings, monkeypatch):
    from evaluations.runs import session

    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 0
    renders = []
    real = session._Frames.grab

    def counting(self, observation, step=0):
        out = real(self, observation, step)
        renders.append(self.render_ms)
        return out

    monkeypatch.setattr(session._Frames, "grab", counting)
    (episode,) = episodes(_run(tenant_a, settings))
    assert episode.status == "completed" and not episode.video and not episode.steps_file
    assert "storage quota" in episode.video_meta["error"] and "storage quota" in episode.steps_meta["error"]
    assert renders and set(renders) == {0.0}  # grab was asked every step and rendered nothing


def test_the_budget_counts_frames_and_steps_together_and_drops_the_steps_at_once():
    budget = RecordBudget(1000)
    recorder = StepRecorder(True, budget)
    recorder.reset(np.zeros(100, np.float32))  # 400 bytes
    assert budget.take(500, 0)  # a frame
    recorder.step(np.zeros(1, np.float32), np.zeros(100, np.float32), 1.0, False, False, {})  # 404 more: past 1000
    assert budget.stopped == {"atStep": 0, "reason": budget.stopped["reason"]} and not recorder.observations
    assert not budget.take(1, 1) and recorder.save("x.npz")["steps_meta"]["stoppedAtStep"] == 0
    assert RecordBudget(10, storage_left=0).stopped["atStep"] == 0


def test_images_rendered_for_the_record_are_split_by_their_paths():
    strip = np.concatenate([np.full((4, 4, 3), 1, np.uint8), np.full((4, 4, 3), 2, np.uint8)], axis=1)
    images = record_images(strip, ("pixels.image", "pixels.image2"))
    assert [(int(images[k][0, 0, 0]), images[k].shape) for k in ("pixels.image", "pixels.image2")] == [
        (1, (4, 4, 3)), (2, (4, 4, 3))]
    assert record_images(strip[:, :7], ("a", "b")) == {}  # not two equal widths
    assert record_images(strip.astype(np.float32), ("a", "b")) == {} and record_images(strip, ()) == {}
    assert frame_from(images["pixels.image"], None).shape == (4, 4, 3)


@pytest.mark.parametrize("value", [4096, 65536, 10**9, -1])
def test_every_size_parameter_is_bounded_at_the_preview_with_its_path_and_range(api, value):
    for env, task, name, high in [("prebuilt/metaworld", "mt10/reach-v3", "image_size", 1024),
                                  ("prebuilt/metaworld", "mt10/reach-v3", "render_size", 1024),
                                  ("prebuilt/mujoco", "locomotion/HalfCheetah-v5", "render_size", 1024)]:
        body = {"model": "prebuilt/random", "tasks": [{"env": env, "taskId": task, "episodes": 1,
                                                        "recordSteps": "all", "params": {name: value}}]}
        r = api.post("/v1/evaluation-previews", body, format="json")
        assert r.status_code == 400, (env, name, r.json())
        detail = next(d for d in r.json()["error"]["details"] if d["path"] == f"tasks[0].params.{name}")
        assert f"to {high}" in detail["message"], detail
    ok = {"model": "prebuilt/random", "tasks": [{"env": "prebuilt/metaworld", "taskId": "mt10/reach-v3", "episodes": 1,
                                                 "params": {"image_size": 128}}]}
    assert api.post("/v1/evaluation-previews", ok, format="json").status_code == 200


def test_every_numeric_parameter_of_the_catalogs_envs_has_a_bound():
    """Every int or float make parameter a task may set on a catalog env is bounded (``param_bounds``), except the
    ones a task never sets (the scenario's own, and perturbations, which have their own rules)."""
    from evaluations.prebuilt.catalog import PREBUILT

    for image in (i for i in PREBUILT if i.kind == "env"):
        module, _, name = image.source.split("://", 1)[1].partition(":")
        params = __import__(module, fromlist=[name]).__dict__[name].params
        fixed = {key for scenario in image.scenarios for key in (scenario.get("params") or {})}
        numeric = {p.name for p in params.params if p.type in (int, float)} - fixed - {"physics"}
        assert numeric <= set(image.param_bounds), (image.name, numeric - set(image.param_bounds))


def test_an_imported_episode_on_a_browser_env_is_not_digest_comparable(api, settings, tmp_path):
    from tests.api.test_imports_api import fixture_doc, make_bundle, upload

    settings.MEDIA_ROOT = tmp_path
    doc = fixture_doc()
    digest = hashlib.sha256(b"episode").hexdigest()
    for w in doc["workloads"]:
        w["env"] = "prebuilt/miniwob"
        for e in w["episodes"]:
            e["trajectoryDigest"] = digest
    body = upload(api, make_bundle(doc)).json()
    items = api.get(f"/v1/evaluations/{body['id']}/episodes").json()["items"]
    assert items and all(e["digestComparable"] is False for e in items)
    doc["workloads"][0]["env"] = "prebuilt/classic-control"
    doc["resultSetId"] = "another"
    body = upload(api, make_bundle(doc)).json()
    items = api.get(f"/v1/evaluations/{body['id']}/episodes").json()["items"]
    assert [e["digestComparable"] for e in items if e["workload"] == 0] == [True] * 2
    assert Episode.objects.filter(evaluation__public_id=body["id"], digest_comparable=False).count() == 2
