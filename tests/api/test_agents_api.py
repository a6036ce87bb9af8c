"""Contract tests for the seed-004 agents API under /agents (seeds/004: every call with its host replaced by
$PUBLIC_URL/agents), on the request bodies of the seed itself."""

from __future__ import annotations

import copy
import io
import json
import socket
import uuid
import zipfile

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from evaluations.choices import EpisodeStatus, EvaluationStatus, StopCondition
from evaluations.crypto import decrypt
from evaluations.models import Episode, Evaluation, Shard, Workload
from tests.conftest import cartpole_request

pytestmark = pytest.mark.django_db

SECRET = "sk-agents-" + uuid.uuid4().hex + "-never-echo"
#: The seed's POST /evaluations/run body, with env_id and task ids from our catalog.
SEED_BODY = {
    "env_id": "miniwob",
    "model": "my-agent-v1",
    "task_ids": ["miniwob.login-user", "miniwob.click-button.s0003"],
    "rollouts_per_example": 1,
    "webhook_url": None,
    "endpoint": {
        "url": "https://your-agent.example.com",
        "key": None,
        "model": "gpt-4.1",
        "use_wrapper": False,
        "send_tool_definitions": False,
        "use_openai_chat": False,
        "minimal_observation": None,
        "additional_params": None,
    },
}
SEED_STATUS_KEYS = {"run_id", "status", "progress", "env_id", "model", "started_at", "completed_at", "evaluation_id",
                    "run_output_path", "evaluations"}
SEED_RESULT_KEYS = {"example_id", "rollout_id", "episode_id", "task", "reward", "task_passed", "task_outcome",
                    "is_completed", "is_truncated", "stop_condition", "verifiers", "error"}


@pytest.fixture(autouse=True)
def public_dns(monkeypatch):
    """The seed's hosts resolve to a public address (nothing here reaches the network)."""
    real = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        if host.endswith("example.com"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def body(**changes) -> dict:
    data = copy.deepcopy(SEED_BODY)
    for key, value in changes.items():
        if key.startswith("endpoint__"):
            data["endpoint"][key.removeprefix("endpoint__")] = value
        else:
            data[key] = value
    return data


def post(client, data, path="/agents/evaluations/run"):
    raw = data if isinstance(data, (str, bytes)) else json.dumps(data)
    return client.post(path, data=raw, content_type="application/json")


def submit(client, **changes) -> dict:
    r = post(client, body(**changes))
    assert r.status_code == 201, r.content
    return r.json()


def error_of(r) -> dict:
    data = r.json()
    assert set(data) == {"error"} and {"code", "message", "details"} <= set(data["error"]), data
    return data["error"]


def add_episode(evaluation, w: int, index: int, *, transcript: bool = True, **fields) -> Episode:
    workload = evaluation.workloads.get(index=w)
    defaults = {"seed": workload.seed + index, "status": EpisodeStatus.COMPLETED, "reward": 1.0, "success": True,
                "steps": 3, "terminated": True, "stop_condition": StopCondition.TERMINATED,
                "agent": {"ending": "finish", "usageReported": True, "endpointMs": 12.5,
                          "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}},
                "verifiers": [{"name": "page_reward", "passed": True, "score": 1.0, "detail": "page"}]}
    defaults.update(fields)
    if transcript:
        doc = {"schema": "rlmesh.transcript.v1", "evaluation": evaluation.public_id, "runId": str(evaluation.run_id),
               "task": workload.task_id, "seed": defaults["seed"], "summary": {}, "events": [{"type": "reset"}]}
        defaults["transcript"] = default_storage.save(f"transcripts/t/{uuid.uuid4().hex}.json",
                                                      ContentFile(json.dumps(doc).encode()))
    episode = Episode.objects.create(evaluation=evaluation, workload=workload, index=index, **defaults)
    Evaluation.objects.filter(pk=evaluation.pk).update(completed_episodes=evaluation.episodes.count())
    return episode


# ----------------------------------------------------------------- catalog
def test_tasks_lists_every_agent_env_with_goals_steps_and_tools(api):
    r = api.get("/agents/evaluations/tasks")
    assert r.status_code == 200
    (env,) = [e for e in r.json()["environments"] if e["env_id"] == "miniwob"]
    assert env["reference"] == "prebuilt/miniwob"
    tasks = {t["task_id"]: t for t in env["tasks"]}
    assert tasks["miniwob.login-user"]["max_steps"] == 8
    assert tasks["miniwob.login-user"]["goal"].startswith("Enter the username")
    assert tasks["miniwob.click-test"]["tools"] == ["click", "wait", "finish"]
    assert "classic-control" not in {e["env_id"] for e in r.json()["environments"]}


# ----------------------------------------------------------------- submit
def test_submit_with_the_seed_body_writes_an_evaluation_on_the_engine(api, tenant_a):
    data = submit(api, endpoint__key=SECRET)
    assert set(data) >= {"run_id", "status", "status_url", "message"}
    run_id = uuid.UUID(data["run_id"])
    assert data["status"] == "QUEUED"
    assert data["status_url"] == f"/evaluations/run/{run_id}/status"
    assert data["message"] == "Evaluation started. Poll status_url for progress and results."
    evaluation = Evaluation.objects.get(run_id=run_id)
    assert evaluation.organization == tenant_a.org and data["evaluation_id"] == evaluation.public_id
    assert decrypt(evaluation.endpoint_key) == SECRET and SECRET not in evaluation.endpoint_key
    assert SECRET not in evaluation.request_raw and SECRET not in json.dumps(evaluation.request)
    assert SECRET not in json.dumps(evaluation.config)
    assert evaluation.request["endpoint"]["key"] == "***"
    login, button = evaluation.workloads.order_by("index")
    assert login.model_ref == "my-agent-v1" and login.model_version.repository.path == "prebuilt/agent-endpoint"
    assert login.env_version.repository.path == "prebuilt/miniwob"
    assert (login.task_id, login.scenario, login.seed, login.max_steps) == ("miniwob.login-user", "miniwob.login-user", 0, 8)
    assert (button.task_id, button.scenario, button.seed) == ("miniwob.click-button.s0003", "miniwob.click-button", 3)
    assert login.env_kwargs == {"task": "login-user", "max_steps": 8}
    assert "key" not in login.model_kwargs and login.model_kwargs["url"] == "https://your-agent.example.com"
    assert login.model_kwargs["use_openai_chat"] is False and login.model_kwargs["model"] == "gpt-4.1"
    assert evaluation.config["maxErrorFraction"] == 1.0 and evaluation.total_episodes == 2


def test_submit_options_reach_the_workloads(api):
    data = submit(api, max_steps=3, rollouts_per_example=4, workers=2, endpoint__minimal_observation=False)
    w = Evaluation.objects.get(run_id=data["run_id"]).workloads.get(index=0)
    assert (w.max_steps, w.episodes, w.workers, w.shards.count()) == (3, 4, 2, 2)
    assert w.env_kwargs == {"task": "login-user", "max_steps": 3, "screenshot": True}


def test_unknown_fields_are_ignored_with_a_warning(api):
    data = submit(api, colour="blue", endpoint__temperature=0.2)
    assert 'unknown field "colour" was ignored' in data["warnings"]
    assert 'unknown field "endpoint.temperature" was ignored' in data["warnings"]


def test_many_unknown_fields_make_a_bounded_warning_list(api, live_worker):
    data = submit(api, **{f"k{i}": 1 for i in range(50)}, **{f"endpoint__e{i}": 1 for i in range(5)})
    assert data["warnings"][:10] == [f'unknown field "k{i}" was ignored' for i in range(10)]
    assert data["warnings"][10:] == ["45 more unknown fields were ignored"]


def test_a_run_says_when_no_worker_is_alive_without_storing_it(api):
    data = submit(api)
    assert any(w.startswith("no worker has been seen") for w in data["warnings"])
    assert not any(w.startswith("no worker") for w in Evaluation.objects.get(run_id=data["run_id"]).warnings)


def test_a_full_env_reference_is_accepted(api):
    data = submit(api, env_id="prebuilt/miniwob")
    assert api.get(f"/agents/evaluations/run/{data['run_id']}/status").json()["env_id"] == "prebuilt/miniwob"


BAD = [
    ({"env_id": "nope"}, "env_id"),
    ({"env_id": "classic-control"}, "env_id"),
    ({"task_ids": ["miniwob.login-user", "miniwob.nope"]}, "task_ids[1]"),
    ({"task_ids": []}, "task_ids"),
    ({"task_ids": ["miniwob.login-user", "miniwob.login-user"]}, "task_ids[1]"),
    ({"task_ids": ["miniwob.login-user"] * 1001}, "task_ids"),
    ({"task_ids": "miniwob.login-user"}, "task_ids"),
    ({"rollouts_per_example": 0}, "rollouts_per_example"),
    ({"rollouts_per_example": -1}, "rollouts_per_example"),
    ({"rollouts_per_example": 1.5}, "rollouts_per_example"),
    ({"rollouts_per_example": "2"}, "rollouts_per_example"),
    ({"rollouts_per_example": 10_001}, "rollouts_per_example"),
    ({"max_steps": 0}, "max_steps"),
    ({"max_steps": 1001}, "max_steps"),
    ({"endpoint__url": "not a url"}, "endpoint.url"),
    ({"endpoint__url": "ftp://agent.example.com"}, "endpoint.url"),
    ({"endpoint__url": "https://user:pw@agent.example.com"}, "endpoint.url"),
    ({"endpoint__url": "http://127.0.0.1:9/"}, "endpoint.url"),
    ({"endpoint__url": "http://10.0.0.7/"}, "endpoint.url"),
    ({"endpoint__url": "http://169.254.169.254/"}, "endpoint.url"),
    ({"endpoint__key": "k" * 4097}, "endpoint.key"),
    ({"endpoint__key": "sk-copied-with-a-newline\n"}, "endpoint.key"),
    ({"endpoint__key": "sk-tab\tinside"}, "endpoint.key"),
    ({"endpoint__key": "sk-not-ascii-é"}, "endpoint.key"),
    ({"endpoint__additional_params": [1, 2]}, "endpoint.additional_params"),
    ({"endpoint__additional_params": {"pad": "x" * 17000}}, "endpoint.additional_params"),
    ({"endpoint__use_wrapper": "yes"}, "endpoint.use_wrapper"),
    ({"webhook_url": "ftp://hooks.example.com/x"}, "webhook_url"),
    ({"webhook_url": "tcp://hooks.example.com:9"}, "webhook_url"),
    ({"webhook_url": "http://127.0.0.1:9/hook"}, "webhook_url"),
    ({"model": 5}, "model"),
    ({"endpoint": "https://agent.example.com"}, "endpoint"),
]


@pytest.mark.parametrize(("changes", "path"), BAD, ids=[p + ":" + json.dumps(c)[:40] for c, p in BAD])
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(api, changes, path):
    before = (Evaluation.objects.count(), Workload.objects.count(), Shard.objects.count())
    r = post(api, body(**changes))
    assert r.status_code == 400, r.content
    error = error_of(r)
    assert path in [d["path"] for d in error["details"]], error
    assert (Evaluation.objects.count(), Workload.objects.count(), Shard.objects.count()) == before


def test_a_refused_key_is_never_quoted_back(api):
    secret = "sk-never-quote-me-0123456789\n"
    r = post(api, body(endpoint__key=secret))
    assert r.status_code == 400 and "never-quote-me" not in r.content.decode()


def test_missing_fields_and_bad_json_are_400(api):
    r = post(api, {"env_id": "miniwob"})
    paths = {d["path"] for d in error_of(r)["details"]}
    assert {"model", "task_ids", "endpoint"} <= paths
    assert post(api, b"{not json").status_code == 400


def test_private_targets_are_allowed_only_when_the_operator_says_so(api, settings):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    data = submit(api, endpoint__url="http://127.0.0.1:9", webhook_url="http://127.0.0.1:9/hook")
    assert Evaluation.objects.get(run_id=data["run_id"]).webhook_url == "http://127.0.0.1:9/hook"


def test_viewers_cannot_submit_and_strangers_are_401(tenant_a, client):
    assert post(tenant_a.client(tenant_a.viewer_key), body()).status_code == 403
    r = client.get("/agents/evaluations")
    assert r.status_code == 401 and error_of(r)["code"] == "unauthenticated"


def test_open_runs_on_an_env_without_open_tasks_are_refused_on_env_id(api):
    r = post(api, {"env_id": "miniwob", "task_definition": "Browse headphones.", "max_steps": 20, "profile_id": "U_001",
                   "rollouts": 1, "endpoint": {"url": "https://your-agent.example.com"}}, path="/agents/runs/open")
    assert r.status_code == 400
    assert [d["path"] for d in error_of(r)["details"]] == ["env_id"]
    assert "takes no open tasks" in error_of(r)["details"][0]["message"]


def test_unknown_paths_are_a_json_404(api):
    r = api.post("/agents/nope", data="{}", content_type="application/json")
    assert r.status_code == 404 and error_of(r)["code"] == "not_found"


# ----------------------------------------------------------------- status
def test_status_has_every_field_of_the_seed(api):
    data = submit(api, endpoint__key=SECRET)
    evaluation = Evaluation.objects.get(run_id=data["run_id"])
    add_episode(evaluation, 0, 0)
    r = api.get(f"/agents/evaluations/run/{data['run_id']}/status")
    assert r.status_code == 200
    doc = r.json()
    assert SEED_STATUS_KEYS <= set(doc)
    assert doc["run_id"] == data["run_id"] and doc["env_id"] == "miniwob" and doc["model"] == "my-agent-v1"
    assert doc["evaluation_id"] == evaluation.public_id == doc["evaluations"][0]["id"]
    assert doc["run_output_path"] == f"outputs/runs/{data['run_id']}"
    assert doc["progress"] == {"completed_rollouts": 1, "total_rollouts": 2, "current_episode_id": None,
                               "current_task_id": None}
    (result,) = doc["evaluations"][0]["results"]
    assert SEED_RESULT_KEYS <= set(result)
    assert result["rollout_id"] == f"{data['run_id']}_0_0" and result["episode_id"].startswith("ep_")
    assert len(result["episode_id"]) == 13
    assert (result["task"], result["reward"], result["task_passed"], result["task_outcome"]) == \
        ("miniwob.login-user", 1.0, True, "pass")
    assert (result["is_completed"], result["is_truncated"], result["stop_condition"]) == (True, False, "terminal_action")
    assert result["verifiers"][0]["name"] == "page_reward" and result["error"] is None
    assert result["transcript_url"] == f"/evaluations/run/{data['run_id']}/transcripts/{result['rollout_id']}"
    assert doc["usage"]["total_tokens"] == 110 and doc["usage"]["tasks"][0]["task"] == "miniwob.login-user"
    assert SECRET not in r.content.decode()


@pytest.mark.parametrize("status", list(EvaluationStatus))
def test_status_words_are_upper_case(api, status):
    data = submit(api)
    Evaluation.objects.filter(run_id=data["run_id"]).update(status=status)
    word = api.get(f"/agents/evaluations/run/{data['run_id']}/status").json()["status"]
    assert word == {"cancelling": "RUNNING"}.get(status, status.upper())


def test_live_progress_names_the_rollout_running_now(api):
    data = submit(api, rollouts_per_example=2)
    evaluation = Evaluation.objects.get(run_id=data["run_id"])
    add_episode(evaluation, 0, 0)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=EvaluationStatus.RUNNING)
    Shard.objects.filter(workload__evaluation=evaluation, workload__index=0).update(status="running")
    progress = api.get(f"/agents/evaluations/run/{data['run_id']}/status").json()["progress"]
    assert progress["current_task_id"] == "miniwob.login-user" and progress["current_episode_id"].startswith("ep_")


ENDPOINT_DOWN = {"status": EpisodeStatus.ERROR, "reward": None, "success": None, "stop_condition": StopCondition.ERROR,
                 "error": "endpoint unavailable: HTTP 503", "agent": {"ending": "endpoint_error"}}
RATE_LIMITED = {**ENDPOINT_DOWN, "error": "rate limited: HTTP 429",
                "agent": {"ending": "rate_limited", "endpointFailure": "rate_limited", "endpointError": "rate limited"}}
BROKEN = {**ENDPOINT_DOWN, "error": "RuntimeError: the env died", "agent": {"ending": "error"}}
OUTCOMES = [
    (ENDPOINT_DOWN, ("error", "endpoint_unavailable", False, False)),
    (RATE_LIMITED, ("error", "rate_limited", False, False)),
    (BROKEN, ("error", "error", False, False)),
    ({"reward": 0.0, "success": False, "terminated": False, "truncated": True, "stop_condition": StopCondition.MAX_STEPS,
      "agent": {"ending": "max_steps"}}, ("fail", "max_steps", True, False)),
    ({"reward": 0.0, "success": False, "terminated": True, "agent": {"ending": "timeout"}},
     ("timeout", "timeout", False, True)),
    ({"reward": 0.0, "success": False, "terminated": True, "agent": {"ending": "page"}},
     ("fail", "terminal_action", False, True)),
]


@pytest.mark.parametrize(("fields", "expected"), OUTCOMES,
                         ids=["endpoint-down", "rate-limited", "broken", "max-steps", "timeout", "fail"])
def test_rollouts_map_to_the_seeds_outcomes(api, fields, expected):
    data = submit(api)
    add_episode(Evaluation.objects.get(run_id=data["run_id"]), 0, 0, **fields)
    doc = api.get(f"/agents/evaluations/run/{data['run_id']}/status").json()
    (r,) = doc["evaluations"][0]["results"]
    assert (r["task_outcome"], r["stop_condition"], r["is_truncated"], r["is_completed"]) == expected
    if r["stop_condition"] in ("rate_limited", "endpoint_unavailable"):
        # Nothing was measured: no verdict, no reward, and the summary counts it apart from failures.
        assert (r["task_passed"], r["reward"]) == (None, None)
        summary = doc["summary"]
        assert summary["endpoint_failures"][r["stop_condition"]] == 1 and summary["scored"] == 0
        assert (summary["failed"], summary["errors"], summary["success_rate"], summary["pass_k"]) == (0, 0, None, None)
    elif r["task_outcome"] == "error":  # the env broke: nothing measured either, counted as an error
        assert (r["task_passed"], r["reward"], doc["summary"]["errors"], doc["summary"]["scored"]) == (None, None, 1, 0)
    else:
        assert r["task_passed"] is False and r["reward"] == 0.0


def test_the_summary_has_pass_at_k_and_pass_hat_k_over_tasks_and_leaves_endpoint_failures_out(api):
    data = submit(api, rollouts_per_example=4)
    evaluation = Evaluation.objects.get(run_id=data["run_id"])
    fail = {"reward": 0.0, "success": False, "agent": {"ending": "page", "usageReported": True, "usageMissingSteps": 1,
            "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55, "cached_tokens": 40,
                      "reasoning_tokens": None}, "toolCallErrors": {"multiple_tool_calls": 2}}}
    # Task 0: pass, pass, fail, rate limited (n = 3 scored, c = 2); task 1: pass, fail, fail, fail (n = 4, c = 1).
    for index, fields in enumerate([{}, {}, fail, RATE_LIMITED]):
        add_episode(evaluation, 0, index, **fields)
    for index, fields in enumerate([{}, fail, fail, fail]):
        add_episode(evaluation, 1, index, **fields)
    doc = api.get(f"/agents/evaluations/run/{data['run_id']}/status").json()
    summary = doc["summary"]
    assert (summary["rollouts"], summary["scored"], summary["passed"], summary["failed"]) == (8, 7, 3, 4)
    assert summary["endpoint_failures"] == {"rate_limited": 1, "endpoint_unavailable": 0}
    assert summary["success_rate"] == pytest.approx(3 / 7) and summary["tool_call_errors"] == {"multiple_tool_calls": 8}
    table = summary["pass_k"]
    assert (table["tasks"], table["min_rollouts"], table["max_rollouts"]) == (2, 3, 4)
    assert [row["k"] for row in table["rows"]] == [1, 2, 3]  # never k = 4: task 0 has 3 scored rollouts
    k2 = table["rows"][1]
    assert k2["pass_at_k"] == pytest.approx(((1 - 0 / 3) + (1 - 3 / 6)) / 2)  # 1 − C(1,2)/C(3,2), 1 − C(3,2)/C(4,2)
    assert k2["pass_hat_k"] == pytest.approx((1 / 3 + 0) / 2)  # C(2,2)/C(3,2), C(1,2)/C(4,2)
    assert 0 <= k2["pass_at_k_ci"][0] <= k2["pass_at_k"] <= k2["pass_at_k_ci"][1] <= 1
    # Usage: cached is a part of prompt (summed apart, never added); a missing usage is counted, not zero.
    usage = doc["usage"]
    assert (usage["prompt_tokens"], usage["cached_tokens"], usage["total_tokens"]) == (100 * 3 + 50 * 4, 160, 110 * 3 + 55 * 4)
    assert (usage["reasoning_tokens"], usage["usage_missing_steps"], usage["usage_partial"]) == (None, 4, True)
    # /v1 scores carry the same table per task group (one task each: no interval) and per model (two tasks).
    scores = api.get(f"/v1/evaluations/{evaluation.public_id}/scores?groupBy=model").json()
    (group,) = scores["groups"]
    assert group["passAtK"]["rows"][1]["passAtK"] == pytest.approx(k2["pass_at_k"])
    assert group["passAtK"]["rows"][2]["passHatKCi"] is not None
    tasks = api.get(f"/v1/evaluations/{evaluation.public_id}/scores?groupBy=task").json()["groups"]
    assert [g["passAtK"]["minRollouts"] for g in tasks] == [3, 4] and tasks[0]["passAtK"]["rows"][0]["passAtKCi"] is None


def test_scores_have_no_pass_at_k_with_one_rollout_per_task(api):
    data = submit(api)
    evaluation = Evaluation.objects.get(run_id=data["run_id"])
    add_episode(evaluation, 0, 0)
    add_episode(evaluation, 1, 0)
    (group,) = api.get(f"/v1/evaluations/{evaluation.public_id}/scores?groupBy=model").json()["groups"]
    assert "passAtK" not in group and group["successRate"] == 1.0
    table = api.get(f"/agents/evaluations/run/{data['run_id']}/status").json()["summary"]["pass_k"]
    assert [row["k"] for row in table["rows"]] == [1]


def test_a_rollouts_transcript_is_linked_and_readable(api):
    data = submit(api)
    add_episode(Evaluation.objects.get(run_id=data["run_id"]), 0, 0)
    (r,) = api.get(f"/agents/evaluations/run/{data['run_id']}/status").json()["evaluations"][0]["results"]
    t = api.get("/agents" + r["transcript_url"])
    assert t.status_code == 200 and t.json()["events"] == [{"type": "reset"}]
    assert api.get(f"/agents/evaluations/run/{data['run_id']}/transcripts/{data['run_id']}_0_9").status_code == 404


# ----------------------------------------------------------------- cancel
def test_delete_cancels_and_keeps_finished_rollouts_then_refuses_with_409(api):
    data = submit(api, rollouts_per_example=2)
    evaluation = Evaluation.objects.get(run_id=data["run_id"])
    add_episode(evaluation, 0, 0)
    r = api.delete(f"/agents/evaluations/run/{data['run_id']}")
    assert r.status_code == 202 and r.json()["status"] == "CANCELLED"
    results = r.json()["evaluations"][0]["results"]
    assert [x["stop_condition"] for x in results] == ["terminal_action", "cancelled", "cancelled", "cancelled"]
    assert results[0]["task_passed"] is True
    # Not run: no verdict and no reward, counted as cancelled and in no rate.
    assert {(x["task_passed"], x["reward"], x["counted_as"]) for x in results[1:]} == {(None, None, "cancelled")}
    summary = r.json()["summary"]
    assert (summary["cancelled"], summary["scored"], summary["success_rate"]) == (3, 1, 1.0)
    again = api.delete(f"/agents/evaluations/run/{data['run_id']}")
    assert again.status_code == 409
    assert "already cancelled" in error_of(again)["message"]


# ----------------------------------------------------------------- lists, other APIs
def test_list_filters_by_environment_and_pages_with_a_cursor(api):
    runs = [submit(api)["run_id"] for _ in range(3)]
    cartpole = post(api, cartpole_request(), path="/v1/evaluations")
    assert cartpole.status_code == 201
    v1 = post(api, {"models": ["prebuilt/random"], "tasks": [{"env": "prebuilt/miniwob", "taskId": "miniwob.click-test",
                                                             "episodes": 1}]}, path="/v1/evaluations").json()
    page = api.get("/agents/evaluations?environment_id=miniwob&limit=2").json()
    assert len(page["items"]) == 2 and page["next_cursor"]
    rest = api.get(f"/agents/evaluations?environment_id=miniwob&limit=2&cursor={page['next_cursor']}").json()
    ids = [i["evaluation_id"] for i in page["items"] + rest["items"]]
    assert rest["next_cursor"] is None and len(ids) == 4 and v1["id"] in ids
    assert cartpole.json()["id"] not in ids
    assert {i["run_id"] for i in page["items"] + rest["items"]} >= set(runs[1:])
    assert api.get("/agents/evaluations?environment_id=classic-control").json()["items"] == []
    detail = api.get(f"/agents/evaluations/{v1['id']}").json()
    assert detail["env_id"] == "miniwob" and detail["model"] == "prebuilt/random"


def test_a_bad_cursor_names_the_lists_own_next_cursor_field(api):
    r = api.get("/agents/evaluations?cursor=not-a-cursor")
    assert r.status_code == 400
    assert error_of(r)["details"] == [{"path": "cursor",
                                       "message": "invalid cursor; pass the next_cursor of the previous page"}]
    v1 = api.get("/v1/evaluations?cursor=not-a-cursor")  # /v1 is camelCase: its lists answer nextCursor
    assert v1.status_code == 400 and "pass the nextCursor of" in error_of(v1)["details"][0]["message"]


def test_an_agent_run_is_an_ordinary_v1_evaluation(api):
    data = submit(api, endpoint__key=SECRET)
    listed = api.get("/v1/evaluations").json()["items"]
    assert data["evaluation_id"] in [e["id"] for e in listed]
    detail = api.get(f"/v1/evaluations/{data['evaluation_id']}")
    assert detail.status_code == 200 and SECRET not in detail.content.decode()
    assert detail.json()["config"]["models"][0]["endpoint"]["key"] == "***"
    assert api.get(f"/agents/evaluations/{data['evaluation_id']}").json()["run_id"] == data["run_id"]


def test_the_output_bundle_holds_results_and_transcripts(api):
    data = submit(api)
    add_episode(Evaluation.objects.get(run_id=data["run_id"]), 0, 0)
    doc = api.get(f"/agents/evaluations/run/{data['run_id']}/status").json()
    r = api.get("/agents/" + doc["run_output_path"])
    assert r.status_code == 200 and r["Content-Type"] == "application/zip"
    bundle = zipfile.ZipFile(io.BytesIO(b"".join(r.streaming_content)))
    assert sorted(bundle.namelist()) == ["results.json", f"transcripts/{data['run_id']}_0_0.json"]
    assert json.loads(bundle.read("results.json"))["run_id"] == data["run_id"]


def test_another_organizations_run_is_a_404_everywhere(api, tenant_b):
    data = submit(api)
    add_episode(Evaluation.objects.get(run_id=data["run_id"]), 0, 0)
    other = tenant_b.client()
    run = data["run_id"]
    for path in (f"/agents/evaluations/run/{run}/status", f"/agents/evaluations/{data['evaluation_id']}",
                 f"/agents/outputs/runs/{run}", f"/agents/evaluations/run/{run}/transcripts/{run}_0_0",
                 f"/agents/evaluations/{run}"):
        assert other.get(path).status_code == 404, path
    assert other.delete(f"/agents/evaluations/run/{run}").status_code == 404
    assert other.get("/agents/evaluations").json()["items"] == []
    assert api.get("/agents/evaluations/run/not-a-uuid/status").status_code == 404
