"""``POST /v1/evaluation-previews``: per task, the interval a request's episodes buy and the episodes ±5/±10 pp need,
and a warning under 20 episodes."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CARTPOLE_TASK, cartpole_request

pytestmark = pytest.mark.django_db


def preview(api, body):
    r = api.post("/v1/evaluation-previews", data=json.dumps(body), content_type="application/json")
    assert r.status_code == 200, r.content
    return r.json()


def test_each_task_gets_its_sample_size_and_few_episodes_warn(api):
    body = cartpole_request(models=["prebuilt/random", "prebuilt/ppo/cartpole"])
    body["tasks"] = [{**CARTPOLE_TASK, "episodes": 10}, {**CARTPOLE_TASK, "episodes": 100, "perturbation": "obs_noise:0.1"}]
    data = preview(api, body)
    few, many = data["estimates"]["sampleSizes"]  # one per task, not per model
    assert (few["env"], few["taskId"], few["perturbation"]) == ("prebuilt/classic-control", "classic/CartPole-v1", "none")
    assert few["sampleSize"]["episodes"] == 10 and few["sampleSize"]["p"] == 0.5
    # Wilson at p = 0.5: h = (z/2)/sqrt(n + z²); 93 and 381 episodes for ±10 and ±5 pp (Wald: 97 and 385).
    assert few["sampleSize"]["halfWidth"] == pytest.approx(0.98 / (10 + 1.959964**2) ** 0.5, abs=1e-4)
    assert (few["sampleSize"]["episodesFor5pp"], few["sampleSize"]["episodesFor10pp"]) == (381, 93)
    assert "fewer than 20" in few["warning"] and many["warning"] is None
    assert many["perturbation"] == "obs_noise:0.1" and many["sampleSize"]["halfWidth"] < 0.1
    warned = [w for w in data["warnings"] if "fewer than 20" in w]
    assert warned == [f"tasks[0] (classic/CartPole-v1): {few['warning']}"]


def test_twenty_episodes_do_not_warn_and_submits_keep_their_warnings(api, live_worker):
    data = preview(api, cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": 20}]))
    assert data["warnings"] == [] and data["estimates"]["sampleSizes"][0]["warning"] is None
    r = api.post("/v1/evaluations", data=json.dumps(cartpole_request()), content_type="application/json")
    assert r.status_code == 201 and r.json()["warnings"] == []  # 3 episodes: the preview warns, the submit does not
