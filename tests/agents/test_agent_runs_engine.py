"""Agent runs on the engine, nothing mocked: a seed-004 run planned, written and its shards run inline (no Celery)
by the local runtime, which starts real MiniWoB env servers (Chromium) and the endpoint bridge, against the
reference agent served over HTTP."""

from __future__ import annotations

import json

import pytest
from django.core.files.storage import default_storage

from evaluations.reports.agents import status_document
from evaluations.choices import EvaluationStatus
from evaluations.models import Evaluation, Shard
from evaluations.planning.agent_runs import plan_agent_run
from evaluations.runs import lifecycle
from evaluations.runs import loop as execution
from tests.support.agents import run_agent_shards_inline

from .conftest import SECRET, free_port

pytestmark = [pytest.mark.django_db, pytest.mark.browser_env, pytest.mark.usefixtures("chromium")]


@pytest.fixture(autouse=True)
def _inline(monkeypatch, settings):
    run_agent_shards_inline(monkeypatch, settings)


def run(tenant, body: dict) -> Evaluation:
    plan = plan_agent_run(body, organization=tenant.org)
    evaluation = lifecycle.create_evaluation(plan=plan, raw_body="{}", organization=tenant.org, creator=tenant.user)
    for shard_id in Shard.objects.filter(evaluation=evaluation).order_by("pk").values_list("pk", flat=True):
        execution.run_shard(shard_id)
    evaluation.refresh_from_db()
    return evaluation


def request(url: str, tasks: list[str], **endpoint) -> dict:
    return {"env_id": "miniwob", "model": "reference-agent", "task_ids": tasks, "rollouts_per_example": 1,
            "endpoint": {"url": url, "key": SECRET, "model": "reference", **endpoint}}


def test_the_reference_agent_passes_through_the_engine_with_transcripts(tenant_a, reference_agent):
    evaluation = run(tenant_a, request(reference_agent, ["miniwob.click-test", "miniwob.login-user"],
                                       minimal_observation=False))
    assert evaluation.status == EvaluationStatus.COMPLETED, evaluation.logs.values_list("message", flat=True)
    doc = status_document(evaluation)
    results = doc["evaluations"][0]["results"]
    assert [r["task"] for r in results] == ["miniwob.click-test", "miniwob.login-user"]
    for r in results:
        assert (r["task_passed"], r["task_outcome"], r["stop_condition"], r["is_completed"]) == \
            (True, "pass", "terminal_action", True), r
        assert r["reward"] == 1.0 and r["usage"]["total_tokens"] > 0 and r["endpoint_ms"] > 0
        # a web page runs in real time: the digest is recorded, marked not comparable (the env's catalog label)
        assert len(r["trajectory_digest"]) == 64 and r["digest_comparable"] is False
        assert r["verifiers"] == [{"name": "page_reward", "kind": "page", "passed": True, "score": 1.0, "detail": pytest.approx(
            r["verifiers"][0]["detail"])}]
    assert doc["usage"]["total_tokens"] == sum(r["usage"]["total_tokens"] for r in results)
    episode = evaluation.episodes.get(workload__index=1)
    text = default_storage.open(episode.transcript.name).read().decode()
    assert SECRET not in text
    transcript = json.loads(text)
    kinds = [e["type"] for e in transcript["events"]]
    assert kinds[:2] == ["reset", "observation"] and kinds[-1] == "score"
    assert kinds.count("model") == episode.steps == kinds.count("tool")
    model = next(e for e in transcript["events"] if e["type"] == "model")
    assert model["request"]["headers"] == {"Authorization": "Bearer ***"} and model["usage"]["total_tokens"] > 0
    shots = [e["screenshot"] for e in transcript["events"] if e["type"] == "observation"]
    assert all(shots) and default_storage.exists(episode.transcript.name.removesuffix(".json") + "/" + shots[0])
    assert episode.agent["toolCalls"] == episode.steps and episode.agent["ending"] in ("page", "finish")
    assert SECRET not in json.dumps(doc) and SECRET not in json.dumps(list(evaluation.logs.values_list("message")))


def test_an_endpoint_that_is_down_ends_its_rollouts_in_error_and_the_run_completes(tenant_a):
    dead = f"http://127.0.0.1:{free_port()}"
    evaluation = run(tenant_a, request(dead, ["miniwob.click-test"]))
    assert evaluation.status == EvaluationStatus.COMPLETED
    doc = status_document(evaluation)
    (r,) = doc["evaluations"][0]["results"]
    assert (r["task_outcome"], r["stop_condition"], r["task_passed"]) == ("error", "endpoint_unavailable", None)
    assert r["error"].startswith("endpoint unavailable")
    assert doc["summary"]["endpoint_failures"] == {"rate_limited": 0, "endpoint_unavailable": 1}
    episode = evaluation.episodes.get()
    assert episode.transcript and episode.agent["endpointError"]


#: What the reference agent is asked to do (its ``reference_faults``): report cached and reasoning tokens, answer the
#: second turn without usage, answer the first call of each conversation 429 (Retry-After 0.2 s) once, and answer
#: every call of the click-button conversations 503 then 429 until the bridge gives up.
FAULTS = {"usage_details": True, "omit_usage_steps": [1], "fail_steps": {"0": 1}, "retry_after": 0.2,
          "fail_goal": "Click on the", "fail_from_step": 0, "statuses": [503, 429]}


def test_cached_usage_missing_usage_and_a_rate_limited_endpoint_are_accounted_for(tenant_a, reference_agent):
    body = {**request(reference_agent, ["miniwob.click-test", "miniwob.click-button", "miniwob.login-user"],
                      additional_params={"reference_faults": FAULTS}), "rollouts_per_example": 2}
    evaluation = run(tenant_a, body)
    assert evaluation.status == EvaluationStatus.COMPLETED, evaluation.logs.values_list("message", flat=True)
    doc = status_document(evaluation, deliveries=False)
    print(json.dumps(doc, indent=1))  # the report's sample status document (pytest -s)
    results = doc["evaluations"][0]["results"]
    limited = [r for r in results if r["task"] == "miniwob.click-button"]
    scored = [r for r in results if r["task"] != "miniwob.click-button"]
    for r in limited:
        # 503 then 429: the bridge's one retry ran out on a 429, so the rollout says rate limited.
        assert (r["task_outcome"], r["stop_condition"], r["task_passed"], r["reward"]) == \
            ("error", "rate_limited", None, None)
        assert r["error"].startswith("rate limited: HTTP 429") and r["retry_ms"] > 0
    for r in scored:
        assert r["task_passed"] is True and r["usage"]["cached_tokens"] > 0, r
        assert r["usage"]["cached_tokens"] <= r["usage"]["prompt_tokens"]
        assert r["usage"]["reasoning_tokens"] <= r["usage"]["completion_tokens"]
        assert r["usage"]["total_tokens"] == r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
    login = [r for r in scored if r["task"] == "miniwob.login-user"]
    assert all(r["usage_missing_steps"] == 1 and r["steps"] > 2 for r in login)  # turn 1 had no usage: missing
    assert any(r["retry_after_ms"] >= 200 for r in scored)  # the first call's 429 was waited out
    summary = doc["summary"]
    assert summary["endpoint_failures"] == {"rate_limited": 2, "endpoint_unavailable": 0}
    assert (summary["scored"], summary["passed"], summary["failed"], summary["success_rate"]) == (4, 4, 0, 1.0)
    assert summary["tasks_without_scored_rollouts"] == 1
    table = summary["pass_k"]
    assert (table["tasks"], [row["k"] for row in table["rows"]]) == (2, [1, 2])
    assert table["rows"][1]["pass_at_k"] == table["rows"][1]["pass_hat_k"] == 1.0
    usage = doc["usage"]
    assert usage["usage_partial"] and usage["usage_missing_steps"] == sum(r["usage_missing_steps"] for r in results)
    assert usage["cached_tokens"] == sum(r["usage"]["cached_tokens"] for r in scored)
    assert usage["prompt_tokens"] == sum(r["usage"]["prompt_tokens"] for r in scored)  # cached never added on top
    episode = evaluation.episodes.get(workload__index=1, index=0)
    events = json.loads(default_storage.open(episode.transcript.name).read())["events"]
    model = next(e for e in events if e["type"] == "model")
    assert [f["status"] for f in model["failures"]] == [503, 429] and model["failure"] == "rate_limited"
    assert [e["failure"] for e in events if e["type"] == "error"] == ["rate_limited"]
