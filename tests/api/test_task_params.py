"""Per-task make parameters (`params`), checked against what the env declares."""

from __future__ import annotations

import pytest

from tests.conftest import CARTPOLE_TASK, cartpole_request

pytestmark = pytest.mark.django_db


def _mujoco(params: dict) -> dict:
    return {"model": "prebuilt/random",
            "tasks": [{"env": "prebuilt/mujoco", "taskId": "locomotion/Hopper-v5", "episodes": 1, "params": params}]}


def test_declared_params_reach_the_env_make_kwargs(api):
    from evaluations.models import Evaluation

    r = api.post("/v1/evaluations", _mujoco({"render_size": 64}), format="json")
    assert r.status_code == 201, r.content
    evaluation = Evaluation.objects.get(public_id=r.json()["id"])
    assert evaluation.workloads.get().env_kwargs == {"env_id": "Hopper-v5", "render_size": 64}
    assert evaluation.config["tasks"][0]["makeKwargs"] == {"env_id": "Hopper-v5", "render_size": 64}


@pytest.mark.parametrize(
    ("params", "path", "message"),
    [
        ({"nope": 1}, "tasks[0].params.nope", 'unknown parameter "nope"'),
        ({"env_id": "Ant-v5"}, "tasks[0].params.env_id", "set by the scenario"),
        ({"render_size": "big"}, "tasks[0].params.render_size", "must be a int"),
        ({"render_size": True}, "tasks[0].params.render_size", "must be a int"),
        ({"physics": 0.1}, "tasks[0].params.physics", "perturbation"),
    ],
)
def test_bad_params_name_the_field(api, params, path, message):
    r = api.post("/v1/evaluation-previews", _mujoco(params), format="json")
    assert r.status_code == 400
    details = r.json()["error"]["details"]
    assert [d["path"] for d in details] == [path] and message in details[0]["message"]


def test_an_env_declaring_only_its_scenario_parameter_takes_no_params(api):
    body = cartpole_request()
    body["tasks"][0]["params"] = {"other": 1}
    r = api.post("/v1/evaluation-previews", body, format="json")
    message = r.json()["error"]["details"][0]["message"]
    assert r.status_code == 400 and 'unknown parameter "other"' in message
    assert message.endswith("(it declares no parameter a task may set)"), message  # not "(declared: )"


@pytest.mark.parametrize(("record", "message"), [
    ("first:99999999999999999999", "N in \"first:N\" must be a whole number from 1 to 999999"),
    ("first:0", "N in \"first:N\" must be a whole number from 1 to 999999"),
    ("sometimes", "is not a recording mode"),
])
def test_a_bad_record_mode_says_what_is_wrong(api, record, message):
    r = api.post("/v1/evaluation-previews", cartpole_request(tasks=[{**CARTPOLE_TASK, "record": record}]), format="json")
    (detail,) = r.json()["error"]["details"]
    assert r.status_code == 400 and detail["path"] == "tasks[0].record" and message in detail["message"]


def test_one_episode_is_one_episode_in_the_sample_size_warning(api):
    r = api.post("/v1/evaluation-previews", cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": 1}]), format="json")
    assert any(": 1 episode is fewer than 20:" in w for w in r.json()["warnings"]), r.json()["warnings"]


def test_the_metaworld_expert_is_refused_outside_metaworld(api):
    r = api.post("/v1/evaluation-previews", cartpole_request(models=["prebuilt/metaworld-expert"]), format="json")
    assert r.status_code == 400
    detail = r.json()["error"]["details"][0]
    assert detail["path"] == "models[0]" and "acts only in prebuilt/metaworld" in detail["message"]
    ok = {"model": "prebuilt/metaworld-expert", "tasks": [{"env": "prebuilt/metaworld", "taskId": "mt10/reach-v3", "episodes": 1}]}
    assert api.post("/v1/evaluation-previews", ok, format="json").status_code == 200


def test_schema_errors_and_unknown_references_come_back_together(api):
    body = {"models": ["nobody/nothing"], "tasks": [{"env": "x/y", "taskId": "a"}]}
    r = api.post("/v1/evaluation-previews", body, format="json")
    assert r.status_code == 400
    paths = {d["path"] for d in r.json()["error"]["details"]}
    assert paths == {"tasks[0].episodes", "tasks[0].env", "models[0]"}  # a string entry is its own path


def test_the_metaworld_catalog_lists_benchmarks_names_and_instructions(api):
    env = api.get("/v1/images/prebuilt/metaworld").json()
    scenarios = {s["id"]: s for s in env["scenarios"]}
    assert len(scenarios) == 75 and {i.split("/")[0] for i in scenarios} == {"mt10", "mt50", "ml10-train", "ml10-test"}
    pick = scenarios["mt10/pick-place-v3"]
    assert pick["name"].startswith("Pick") and "puck" in pick["instruction"]
    assert pick["successCriterion"]["kind"] == "env_flag"  # declared: Meta-World's own info["success"] decides


@pytest.mark.parametrize("field, value, path", [("model", 5, "model"), ("models", [5], "models[0]")])
def test_a_model_that_is_neither_a_string_nor_an_object_is_named(api, field, value, path):
    body = {k: v for k, v in cartpole_request().items() if k not in ("model", "models")} | {field: value}
    (detail,) = api.post("/v1/evaluation-previews", body, format="json").json()["error"]["details"]
    assert detail == {"path": path, "message": 'must be a model reference (a string) or an object with "model", not int'}
