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
    (r,) = status_document(evaluation)["evaluations"][0]["results"]
    assert (r["task_outcome"], r["stop_condition"], r["task_passed"]) == ("error", "error", False)
    assert r["error"].startswith("endpoint unavailable")
    episode = evaluation.episodes.get()
    assert episode.transcript and episode.agent["endpointError"]
