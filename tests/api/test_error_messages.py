"""Error messages a new user found misleading: each says what is actually wrong, at the right path."""

from __future__ import annotations

import json

from tests.conftest import CARTPOLE_TASK, cartpole_request
from tests.support.comparisons import HEURISTICS, RANDOM, finished


def details(api, body, url="/v1/evaluation-previews") -> list[dict]:
    r = api.post(url, body, format="json") if not isinstance(body, str) else api.post(
        url, body, content_type="application/json")
    assert r.status_code == 400, r.content
    return r.json()["error"]["details"]


def test_an_index_past_the_last_scenario_is_not_called_a_leading_zero(api):
    for task_id, why in [("classic/99", "indexes 0–4 (99 is past the last)"),
                         ("classic/05", "(write the index without leading zeros)")]:
        (d,) = details(api, cartpole_request(tasks=[{**CARTPOLE_TASK, "taskId": task_id}]))
        assert d["path"] == "tasks[0].taskId" and why in d["message"], d
        assert task_id == "classic/05" or "leading zeros" not in d["message"]
    (d,) = details(api, {"models": ["prebuilt/random"], "tasks": [
        {"env": "prebuilt/libero", "taskId": "libero_object/10", "episodes": 1}]})
    assert "libero_object has 10 scenarios, indexes 0–9 (10 is past the last)" in d["message"], d


def test_a_threshold_given_as_a_string_is_called_not_a_number_not_missing(api):
    task = {**CARTPOLE_TASK, "successCriterion": {"kind": "return_at_least", "threshold": "200"}}
    (d,) = details(api, cartpole_request(tasks=[task]))
    assert d["path"] == "tasks[0].successCriterion.threshold"
    assert "must be a finite number" in d["message"] and "a string ('200')" in d["message"]
    assert "required" not in d["message"]


def test_a_string_model_reference_is_reported_at_its_own_path(api):
    """Field case: ``"model": "prebuilt/nope"`` was reported at ``model.model``."""
    body = {"model": "prebuilt/nope", "tasks": [CARTPOLE_TASK]}
    assert [d["path"] for d in details(api, body)] == ["model"]
    assert [d["path"] for d in details(api, {"model": {"model": "prebuilt/nope"}, "tasks": [CARTPOLE_TASK]})] == ["model.model"]
    assert [d["path"] for d in details(api, {"models": [RANDOM, "prebuilt/nope"], "tasks": [CARTPOLE_TASK]})] == ["models[1]"]


def test_a_comparison_without_b_says_b_is_missing(api, tenant_a):
    """Field case: ``?a=`` an evaluation with two models and no ``b`` complained about ``a``."""
    multi = finished(tenant_a, models=(RANDOM, HEURISTICS)).public_id
    r = api.get("/v1/comparisons", {"a": multi})
    assert r.status_code == 400
    assert [d["path"] for d in r.json()["error"]["details"]] == ["b"] and "is required" in r.json()["error"]["message"]


def test_a_seed_of_5000_digits_gets_the_seed_range(api):
    body = json.dumps(cartpole_request()).replace('"episodes": 3', '"episodes": 3, "seed": ' + "9" * 5000)
    (d,) = details(api, body)
    assert d["path"] == "tasks[0].seed" and "from 0 to 4611686018427387904" in d["message"], d
    assert "set_int_max_str_digits" not in d["message"]


def test_a_benchmark_without_perturbations_says_so_plainly(api):
    (d,) = details(api, {"models": [RANDOM], "tasks": [
        {"env": "prebuilt/libero", "taskId": "libero_90/0", "episodes": 1, "perturbation": "language"}]})
    assert d["path"] == "tasks[0].perturbation" and "libero_90 supports no env-side perturbation" in d["message"], d
    assert "it supports:" not in d["message"]


def test_an_overlong_image_name_is_an_invalid_reference_not_a_404(api):
    r = api.get("/v1/images/acme/" + "x" * 3000)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_reference", r.content[:300]
    assert "repository name of 3000 characters: at most 128" in r.json()["error"]["message"]
    assert len(r.json()["error"]["message"]) < 300
    assert api.get("/v1/images/acme/" + "x" * 128).status_code == 404  # well-formed, no such image
