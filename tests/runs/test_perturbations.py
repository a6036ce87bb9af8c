"""Perturbations (catalog, validation, reproducible application) and episode videos, on real rlmesh servers."""

from __future__ import annotations

import subprocess

import imageio_ffmpeg
import numpy as np
import pytest
from django.core.files.storage import default_storage
from gymnasium import spaces

from evaluations.domain import perturbations
from evaluations.domain.perturbations import Perturbation, PerturbationError, Perturber
from tests.conftest import cartpole_request
from tests.support.execution import create, episodes, run_all

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    from evaluations.runs import loop as execution

    monkeypatch.setattr(execution, "HEARTBEAT_SECONDS", 3600)


@pytest.mark.parametrize(
    ("text", "label"),
    [(None, "none"), ("", "none"), ("none", "none"), ("obs_noise:0.05", "obs_noise:0.05"),
     ("action_noise:0.1", "action_noise:0.1"), ("action_repeat:2", "action_repeat:2"),
     ("action_delay:3.0", "action_delay:3"), ("physics:0.2", "physics:0.2")],
)
def test_perturbations_parse_to_canonical_labels(text, label):
    assert perturbations.parse(text).label == label


@pytest.mark.parametrize(
    ("text", "message"),
    [("wind:1", "unknown perturbation"), ("none:0", "takes no strength"), ("obs_noise", "give a strength"), ("obs_noise:abc", "must be a number"),
     ("obs_noise:-1", "between 0 and 10"), ("action_repeat:1.5", "whole number"), ("physics:nan", "between")],
)
def test_bad_perturbations_are_refused_with_the_reason(text, message):
    with pytest.raises(PerturbationError, match=message):
        perturbations.parse(text)


def test_the_same_seed_perturbs_identically_and_another_seed_differently():
    p = Perturbation("obs_noise", 0.1)
    obs = {"state": np.zeros(4, np.float32), "image": np.zeros((2, 2, 3), np.uint8), "task": "reach"}
    a, b, c = Perturber(p, 7, None).observation(obs), Perturber(p, 7, None).observation(obs), Perturber(p, 8, None).observation(obs)
    assert np.array_equal(a["state"], b["state"]) and not np.array_equal(a["state"], c["state"])
    assert a["state"].dtype == np.float32 and np.array_equal(a["image"], obs["image"]) and a["task"] == "reach"


def test_action_perturbations():
    box = spaces.Box(-1.0, 1.0, (2,), np.float32)
    noisy = Perturber(Perturbation("action_noise", 5.0), 0, box).action(np.zeros(2, np.float32))
    assert box.contains(noisy) and np.any(noisy != 0)  # clipped into the space
    delay = Perturber(Perturbation("action_delay", 2), 0, box)
    assert [int(delay.action(np.int64(a))) for a in (5, 6, 7, 8)] == [5, 5, 5, 6]
    repeat = Perturber(Perturbation("action_repeat", 3), 0, box)
    seen = []
    for a in range(7):
        asks = repeat.wants_prediction()
        seen.append((asks, int(repeat.action(np.int64(a)))))
    assert [s[1] for s in seen] == [0, 0, 0, 3, 3, 3, 6] and [s[0] for s in seen] == [True, False, False, True, False, False, True]


def test_a_request_with_a_bad_perturbation_or_record_mode_names_the_field(api):
    body = cartpole_request()
    body["tasks"][0]["perturbation"] = "wind:1"
    body["tasks"].append({**body["tasks"][0], "perturbation": "physics:0.1", "record": "sometimes"})
    r = api.post("/v1/evaluation-previews", body, format="json")
    assert r.status_code == 400
    by_path = {d["path"]: d["message"] for d in r.json()["error"]["details"]}
    assert "unknown perturbation" in by_path["tasks[0].perturbation"]
    assert "`physics` make parameter" in by_path["tasks[1].perturbation"]  # classic control has none
    assert "recording mode" in by_path["tasks[1].record"]


def test_an_observation_noise_sweep_on_cartpole_degrades_the_heuristic_and_is_reproducible(tenant_a):
    body = cartpole_request()
    base = {**body["tasks"][0], "episodes": 3}
    body["tasks"] = [{**base, "perturbation": p} for p in ("none", "obs_noise:0.5", "action_noise:0.9")]
    first = create(tenant_a, body)
    run_all(first)
    eps = episodes(first)
    by = {p: [e for e in eps if e.workload.perturbation == p] for p in ("none", "obs_noise:0.5", "action_noise:0.9")}
    assert all(e.steps == 500 for e in by["none"]) and all(e.perturbation == {} for e in by["none"])
    assert sum(e.steps for e in by["obs_noise:0.5"]) < 1500 and sum(e.steps for e in by["action_noise:0.9"]) < 1500
    assert by["obs_noise:0.5"][0].perturbation == {"name": "obs_noise", "strength": 0.5, "label": "obs_noise:0.5"}
    second = create(tenant_a, body)
    run_all(second)
    assert [(e.seed, e.steps, e.reward) for e in eps] == [(e.seed, e.steps, e.reward) for e in episodes(second)]
    scores = {g["key"]["perturbation"]: g for g in _scores(first, "perturbation")}
    assert scores["none"]["successRate"] == 1.0 and scores["obs_noise:0.5"]["successRate"] < 1.0


def _scores(evaluation, group_by):
    from evaluations.reports.scores import evaluation_scores

    return evaluation_scores(evaluation, group_by)["groups"]


def _duration_s(path: str) -> float:
    out = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-i", path], capture_output=True, text=True).stderr
    h, m, s = out.split("Duration: ")[1].split(",")[0].split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def test_recording_first_n_stores_playable_h264_only_for_those_episodes(tenant_a):
    body = cartpole_request(models=["prebuilt/random"])
    body["tasks"][0].update(episodes=3, record="first:2")
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    eps = episodes(evaluation)
    assert [bool(e.video) for e in eps] == [True, True, False]
    for e in eps[:2]:
        meta = e.video_meta
        assert meta["codec"] == "h264" and meta["frames"] == e.steps + 1 and (meta["width"], meta["height"]) == (600, 400)
        assert meta["bytes"] == default_storage.size(e.video.name) and meta["encodeMs"] > 0
        assert meta["fps"] == 50  # CartPole's declared render_fps: the video plays in the env's real time
        assert _duration_s(default_storage.path(e.video.name)) == pytest.approx(meta["frames"] / 50, abs=0.1)
        probe = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-i", default_storage.path(e.video.name)], capture_output=True, text=True).stderr
        assert "h264" in probe and "600x400" in probe  # the frame's own size, not padded to 16-pixel blocks


def test_recording_failures_keeps_only_failed_episodes(tenant_a):
    body = cartpole_request()
    body["tasks"] = [{**body["tasks"][0], "episodes": 2, "record": "failures", "perturbation": p} for p in ("none", "action_noise:1")]
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    eps = episodes(evaluation)
    assert all(e.success and not e.video for e in eps if e.workload.perturbation == "none")
    failed = [e for e in eps if not e.success]
    assert failed and all(e.video and e.video_meta["frames"] == e.steps + 1 for e in failed)


def test_the_preview_budgets_rendering_for_recorded_episodes(api):
    body = cartpole_request()
    body["tasks"][0]["episodes"] = 10
    plain = api.post("/v1/evaluation-previews", body, format="json").json()
    body["tasks"][0]["record"] = "first:4"
    recorded = api.post("/v1/evaluation-previews", body, format="json").json()
    assert plain["estimates"]["maxRenderedFrames"] == 0 and recorded["estimates"]["maxRenderedFrames"] == 4 * 500
    assert recorded["estimates"]["estimatedSecondsUpperBound"] > plain["estimates"]["estimatedSecondsUpperBound"] + 4 * 500 * 0.1


@pytest.mark.parametrize(("metadata", "fps"), [({"render_fps": 20}, 20), ({"render_fps": 80.0}, 80), ({}, 30),
                                               (None, 30), ({"render_fps": "x"}, 30), ({"render_fps": 0}, 30),
                                               ({"render_fps": 1000}, 30)])
def test_videos_play_at_the_envs_declared_rate(metadata, fps):
    from evaluations.runs.recording import playback_fps

    assert playback_fps(metadata) == fps
