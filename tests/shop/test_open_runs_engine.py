"""Shop runs on the engine, nothing mocked: catalog and open runs planned, written and run inline (no Celery) by
the local runtime, which starts real shop env servers (Chromium) and the endpoint bridge, against the reference
agent and scripted agents over HTTP; the judge is an OpenAI-compatible server asked by the worker."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.files.storage import default_storage

from evaluations.reports.agents import status_document
from evaluations.choices import EvaluationStatus
from evaluations.models import Evaluation, Shard
from evaluations.planning.agent_runs import plan_agent_run
from evaluations.planning.open_runs import plan_open_run
from evaluations.prebuilt.shop.tasks import catalog
from evaluations.reports.scores import evaluation_scores
from evaluations.runs import lifecycle
from evaluations.runs import loop as execution
from tests.support.agents import run_agent_shards_inline

pytestmark = [pytest.mark.django_db, pytest.mark.browser_env, pytest.mark.usefixtures("chromium")]

JUDGE_KEY = "sk-judge-" + uuid.uuid4().hex
TASK = catalog(0)["shop.cart.t001"]  # "Add the <product> to your cart."


@pytest.fixture(autouse=True)
def _inline(monkeypatch, settings):
    run_agent_shards_inline(monkeypatch, settings)


def run(tenant, plan) -> Evaluation:
    evaluation = lifecycle.create_evaluation(plan=plan, raw_body="{}", organization=tenant.org, creator=tenant.user)
    for shard_id in Shard.objects.filter(evaluation=evaluation).order_by("pk").values_list("pk", flat=True):
        execution.run_shard(shard_id)
    evaluation.refresh_from_db()
    assert evaluation.status == EvaluationStatus.COMPLETED, list(evaluation.logs.values_list("message", flat=True))
    return evaluation


def open_run(tenant, url: str, **fields) -> Evaluation:
    body = {"env_id": "shop", "task_definition": TASK.goal, "max_steps": 12, "profile_id": "U_001", "rollouts": 1,
            "endpoint": {"url": url, "model": "reference"}, **fields}
    return run(tenant, plan_open_run(body, organization=tenant.org))


def results(evaluation) -> list[dict]:
    return status_document(evaluation)["evaluations"][0]["results"]


def transcript(evaluation) -> dict:
    episode = evaluation.episodes.get()
    return json.loads(default_storage.open(episode.transcript.name).read())


def http_agent(serve_json, tool: str, **arguments) -> str:
    """An HTTP-protocol agent that answers every step with the same call."""
    return serve_json(lambda path, body: {"tool": tool, "arguments": arguments})


def test_open_runs_with_request_verifiers_pass_and_fail(tenant_a, reference_agent):
    right = [{"check": "cart_count", "where": {"id": TASK.verifiers[0]["where"]["id"]}, "op": "==", "value": 1}]
    evaluation = open_run(tenant_a, reference_agent, verifiers=right)
    (r,) = results(evaluation)
    assert (r["task"], r["task_passed"], r["task_outcome"], r["stop_condition"], r["reward"]) == \
        ("shop.open", True, "pass", "terminal_action", 1.0), r
    assert r["verifiers"][0]["kind"] == "state" and r["verifiers"][0]["passed"]
    score = transcript(evaluation)["events"][-1]
    assert score["type"] == "score" and score["finalState"]["cart"][0]["id"] == right[0]["where"]["id"]
    wrong = [*right, {"check": "wishlist_contains", "where": {"category": "headphones"}, "name": "saved headphones"}]
    (r,) = results(open_run(tenant_a, reference_agent, verifiers=wrong))
    assert (r["task_passed"], r["task_outcome"], r["reward"]) == (False, "fail", 0.5)
    assert r["verifiers"][1] == {**r["verifiers"][1], "name": "saved headphones", "passed": False}
    assert "the wish list is empty" in r["verifiers"][1]["detail"]


def test_an_open_run_without_verifiers_or_judge_is_unverified(tenant_a, reference_agent):
    evaluation = open_run(tenant_a, reference_agent)
    (r,) = results(evaluation)
    assert (r["task_passed"], r["task_outcome"], r["reward"], r["verifiers"]) == (None, "unverified", None, [])
    assert r["stop_condition"] == "terminal_action" and r["is_completed"] and r["steps"] > 1
    episode = evaluation.episodes.get()
    assert episode.success is None and episode.success_source == "" and episode.transcript
    (group,) = evaluation_scores(evaluation, "task")["groups"]
    assert (group["successUndefined"], group["episodes"], group["successRate"], group["meanReward"]) == (1, 1, None, None)
    assert status_document(evaluation)["usage"]["unverified"] == 1


def test_a_judge_decides_an_open_run_without_verifiers(tenant_a, reference_agent, serve_json):
    def judge(path, body):
        payload = json.loads(body["messages"][1]["content"])
        passed = any(i["id"] == TASK.verifiers[0]["where"]["id"] for i in payload["final_state"]["cart"])
        arguments = json.dumps({"passed": passed, "reason": f"cart holds {len(payload['final_state']['cart'])} item"})
        return {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"], "choices": [{
            "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "verdict", "arguments": arguments}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    url = serve_json(judge)
    evaluation = open_run(tenant_a, reference_agent, judge={"url": url, "key": JUDGE_KEY, "model": "judge-1"})
    (r,) = results(evaluation)
    assert (r["task_passed"], r["task_outcome"], r["reward"]) == (True, "pass", 1.0)
    assert r["verifiers"] == [{"name": "judge", "kind": "judge", "passed": True, "score": 1.0,
                               "detail": "cart holds 1 item"}]
    (call,) = serve_json.servers[-1].calls
    headers = {k.lower(): v for k, v in call["headers"].items()}
    assert headers["authorization"] == f"Bearer {JUDGE_KEY}" and call["body"]["model"] == "judge-1"
    assert json.loads(call["body"]["messages"][1]["content"])["task"] == TASK.goal
    document = transcript(evaluation)
    judge_event = next(e for e in document["events"] if e["type"] == "judge")
    assert judge_event["request"]["headers"] == {"Authorization": "Bearer ***"}
    assert JUDGE_KEY not in json.dumps(document) + json.dumps(status_document(evaluation))
    assert evaluation.episodes.get().success_source == "criterion"


def test_an_agent_that_finishes_at_once_ends_terminal_action_with_failing_verifiers(tenant_a, serve_json):
    url = http_agent(serve_json, "finish", reason="bye")
    body = {"env_id": "shop", "model": "quitter", "task_ids": ["shop.cart.t001"],
            "endpoint": {"url": url, "use_openai_chat": False}}
    (r,) = results(run(tenant_a, plan_agent_run(body, organization=tenant_a.org)))
    assert (r["stop_condition"], r["is_truncated"], r["task_passed"], r["task_outcome"], r["steps"]) == \
        ("terminal_action", False, False, "fail", 1)
    assert r["reward"] == 0.0 and len(r["verifiers"]) == 2 and not any(v["passed"] for v in r["verifiers"])


def test_an_agent_that_never_finishes_is_truncated_at_exactly_max_steps(tenant_a, serve_json):
    url = http_agent(serve_json, "wait", ms=1)
    evaluation = open_run(tenant_a, url, max_steps=3, endpoint={"url": url, "use_openai_chat": False},
                          verifiers=[{"check": "page", "is": "home"}])
    (r,) = results(evaluation)
    assert (r["stop_condition"], r["is_truncated"], r["steps"], r["task_outcome"]) == ("max_steps", True, 3, "pass")
    assert len(serve_json.servers[-1].calls) == 3
    events = transcript(evaluation)["events"]
    assert [e["type"] for e in events].count("tool") == 3 and events[-1]["ending"] == "max_steps"
