"""Units of agent runs that need no browser: the encrypted key, the 3-step run-id migration, the transcript
recorder's events and summary, and signed webhook deliveries against a real loopback receiver."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from standardwebhooks import Webhook

from evaluations import webhooks
from evaluations.choices import EpisodeStatus, EvaluationStatus, StopCondition
from evaluations.crypto import SecretUnreadable, decrypt, encrypt
from evaluations.models import Evaluation
from evaluations.planning.agent_runs import plan_agent_run
from evaluations import dispatch
from evaluations.runs import lifecycle
from evaluations.runs.transcripts import TranscriptRecorder

SECRET = "sk-records-do-not-leak"


def test_keys_are_encrypted_and_unreadable_under_another_key(settings):
    token = encrypt(SECRET)
    assert SECRET not in token and decrypt(token) == SECRET and encrypt("") == "" and decrypt("") == ""
    settings.RLMESH_SECRETS_KEY = "A" * 43 + "="
    with pytest.raises(SecretUnreadable):
        decrypt(token)


@pytest.mark.django_db(transaction=True)
def test_existing_evaluations_get_distinct_run_ids():
    executor = MigrationExecutor(connection)
    executor.migrate([("evaluations", "0006_organization_storage_bytes")])
    apps = executor.loader.project_state([("evaluations", "0006_organization_storage_bytes")]).apps
    org = apps.get_model("evaluations", "Organization").objects.create(slug="m", name="M")
    Evaluation_ = apps.get_model("evaluations", "Evaluation")
    for _ in range(3):
        Evaluation_.objects.create(organization=org, request_raw="{}", request={})
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    ids = list(Evaluation.objects.values_list("run_id", flat=True))
    assert len(ids) == 3 and len(set(ids)) == 3 and all(ids)


# ----------------------------------------------------------------- transcripts
def _action(tool, arguments, *, usage=10, messages=2, **trace_extra):
    trace = {"protocol": "openai-chat", "latencyMs": 4.0, "overheadMs": 0.5, "attempts": 1, "backoffMs": 0.0,
             "error": None, "usage": {"prompt_tokens": usage, "completion_tokens": 1, "total_tokens": usage + 1},
             **trace_extra,
             "request": {"method": "POST", "url": "http://x/v1/chat/completions",
                         "headers": {"Authorization": "Bearer ***"},
                         "body": {"messages": [{"role": "user", "content": f"m{i}"} for i in range(messages)]}},
             "reply": {"status": 200, "content": None, "tool_calls": []}}
    return json.dumps({"tool": tool, "arguments": arguments, "trace": trace})


def _obs(step, *, error="", shot=False):
    obs = {"goal": "Click the button.", "dom": f"[4] button 'Ok' {step}", "error": error, "raw": "{}", "meta": "{}"}
    if shot:
        obs["screenshot"] = np.zeros((210, 160, 3), np.uint8)
    return obs


@pytest.mark.django_db
def test_the_recorder_writes_typed_ordered_events_and_sums_usage(tenant_a, settings):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    plan = plan_agent_run({"env_id": "miniwob", "model": "m", "task_ids": ["miniwob.click-test"],
                           "endpoint": {"url": "http://127.0.0.1:9", "key": SECRET}}, organization=tenant_a.org)
    evaluation = lifecycle.create_evaluation(plan=plan, raw_body="{}", organization=tenant_a.org)
    workload = evaluation.workloads.get()
    rec = TranscriptRecorder(evaluation=evaluation, workload=workload, index=0, key=SECRET)
    rec.on_reset(_obs(0, shot=True), {}, seed=0)
    cached = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11, "cached_tokens": 6,
              "reasoning_tokens": None}
    first = json.loads(_action("x", {}, attempts=3, retryMs=100.0, backoffMs=90.0, retryAfterMs=80.0,
                               retryAfterCount=1))["trace"]
    first["usage"] = cached
    rec.on_step(1, json.dumps({"tool": None, "error": "no tool call", "error_code": "multiple_tool_calls",
                               "trace": first}),
                _obs(1, error="ERROR: no tool call"), 0.0, False, False, {"error": "ERROR: no tool call"},
                predict_ms=5.0, step_ms=1.0)
    second = json.loads(_action("type_text", {"ref": 4, "text": SECRET}, messages=4))
    second["trace"]["usage"] = None  # this reply carried no usage: missing, not 0
    rec.on_step(2, json.dumps(second), _obs(2), 1.0, True, False,
                {"tool_result": "clicked", "raw_reward": 1.0, "page_ended": True, "is_success": True},
                predict_ms=5.0, step_ms=2.0)
    fields = rec.finish({"status": EpisodeStatus.COMPLETED, "reward": 1.0, "success": True, "terminated": True,
                         "stop_condition": StopCondition.TERMINATED, "seed": 0})
    assert fields["verifiers"][0] == {"name": "page_reward", "kind": "page", "passed": True, "score": 1.0,
                                      "detail": fields["verifiers"][0]["detail"]}
    summary = fields["agent"]
    assert (summary["steps"], summary["toolCalls"], summary["invalidCalls"], summary["ending"]) == (2, 1, 1, "page")
    assert summary["usage"] == cached and (summary["usageSteps"], summary["usageMissingSteps"]) == (1, 1)
    assert summary["toolCallErrors"] == {"multiple_tool_calls": 1}
    assert summary["endpointMs"] == 8.0 and summary["predictMs"] == 10.0
    assert (summary["retryMs"], summary["backoffMs"], summary["retryAfterMs"], summary["calls"]) == (100, 90, 80, 4)
    text = default_storage.open(fields["transcript"]).read().decode()
    assert SECRET not in text
    events = json.loads(text)["events"]
    assert [e["type"] for e in events] == ["reset", "observation", "model", "error", "tool", "observation", "model",
                                           "tool", "observation", "score"]
    assert [e["step"] for e in events] == [0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert (events[3]["kind"], events[3]["code"]) == ("invalid_call", "multiple_tool_calls")
    assert events[2]["retryAfterMs"] == 80.0 and events[6]["usage"] is None
    assert events[1]["text"].startswith("GOAL: Click the button.\nDOM:") and events[1]["screenshot"] == "step-000.png"
    assert events[5]["text"].startswith("ERROR: no tool call\nDOM:")
    second = events[6]["request"]["body"]
    assert second["messages_before"] == 3 and [m["content"] for m in second["messages"]] == ["m3"]
    assert all(b["t"] <= a["t"] for b, a in zip(events, events[1:]))


@pytest.mark.django_db
def test_an_endpoint_error_makes_the_rollout_an_error_with_its_reason(tenant_a, settings):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    plan = plan_agent_run({"env_id": "miniwob", "model": "m", "task_ids": ["miniwob.click-test"],
                           "endpoint": {"url": "http://127.0.0.1:9"}}, organization=tenant_a.org)
    evaluation = lifecycle.create_evaluation(plan=plan, raw_body="{}", organization=tenant_a.org)
    rec = TranscriptRecorder(evaluation=evaluation, workload=evaluation.workloads.get(), index=0)
    rec.on_reset(_obs(0), {}, seed=0)
    message = "endpoint unavailable: connection failed"
    rec.on_step(1, json.dumps({"tool": "__endpoint_error__", "arguments": {"message": message}}), _obs(1), 0.0, False,
                True, {"endpoint_error": message}, predict_ms=1.0, step_ms=1.0)
    fields = rec.finish({"status": EpisodeStatus.COMPLETED, "reward": 0.0, "success": False, "truncated": True,
                         "stop_condition": StopCondition.TIME_LIMIT, "seed": 0})
    assert (fields["status"], fields["stop_condition"], fields["error"]) == ("error", "error", message)
    assert fields["agent"]["ending"] == "endpoint_unavailable" and fields["verifiers"] == []
    assert (fields["success"], fields["reward"]) == (None, None)  # nothing measured: no verdict, no return
    rec = TranscriptRecorder(evaluation=evaluation, workload=evaluation.workloads.get(), index=1)
    rec.on_reset(_obs(0), {}, seed=0)
    rec.on_step(1, json.dumps({"tool": "__endpoint_error__", "failure": "rate_limited",
                               "arguments": {"message": "rate limited: HTTP 429"}}), _obs(1), 0.0, False, True,
                {"endpoint_error": "rate limited: HTTP 429"}, predict_ms=1.0, step_ms=1.0)
    fields = rec.finish({"status": EpisodeStatus.COMPLETED, "reward": 0.0, "success": False, "truncated": True,
                         "stop_condition": StopCondition.TIME_LIMIT, "seed": 0})
    assert (fields["agent"]["ending"], fields["agent"]["endpointFailure"]) == ("rate_limited", "rate_limited")
    assert fields["error"] == "rate limited: HTTP 429"


# ----------------------------------------------------------------- webhooks
class Receiver:
    """A loopback webhook receiver answering each POST with the next status of ``answers``."""

    def __init__(self, answers: list[int]):
        self.answers, self.received = list(answers), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append((dict(self.headers), body))
                self.send_response(outer.answers.pop(0) if outer.answers else 200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.mark.django_db
def test_webhooks_are_signed_logged_and_retried_with_backoff(tenant_a, settings, monkeypatch):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    settings.RLMESH_WEBHOOK_BACKOFF_SECONDS = 2.0
    receiver = Receiver([500])
    sent: list[tuple] = []
    monkeypatch.setattr(dispatch, "send_webhook", lambda *a, **kw: sent.append((a, kw)))
    plan = plan_agent_run({"env_id": "miniwob", "model": "m", "task_ids": ["miniwob.click-test"],
                           "webhook_url": receiver.url, "endpoint": {"url": "http://127.0.0.1:9"}},
                          organization=tenant_a.org)
    evaluation = lifecycle.create_evaluation(plan=plan, raw_body="{}", organization=tenant_a.org)
    lifecycle.cancel_evaluation(evaluation)
    assert sent == [((evaluation.pk,), {})]  # the terminal status sent the first attempt
    first = webhooks.deliver(evaluation.pk, 1)
    assert first.status_code == 500 and "HTTP 500" in first.error and first.next_attempt_at
    assert sent[-1] == ((evaluation.pk, 2), {"countdown": 2.0})
    second = webhooks.deliver(evaluation.pk, 2)
    assert second.status_code == 200 and second.error == "" and second.next_attempt_at is None
    assert webhooks.deliver(evaluation.pk, 2) is None  # a repeated message for the same attempt
    secret = webhooks.webhook_secret(tenant_a.org)
    assert secret.startswith("whsec_")
    bodies = []
    for headers, raw in receiver.received:
        bodies.append(Webhook(secret).verify(raw, headers))
    assert receiver.received[0][1] == receiver.received[1][1]
    assert receiver.received[0][0]["webhook-id"] == receiver.received[1][0]["webhook-id"]
    assert bodies[0]["status"] == "CANCELLED" and bodies[0]["run_id"] == str(evaluation.run_id)
    with pytest.raises(Exception):
        Webhook(webhooks.new_secret()).verify(receiver.received[0][1], receiver.received[0][0])
    evaluation.refresh_from_db()
    assert evaluation.status == EvaluationStatus.CANCELLED
    assert [d.attempt for d in evaluation.webhook_deliveries.all()] == [1, 2]


@pytest.mark.django_db
def test_the_last_attempt_schedules_no_other(tenant_a, settings, monkeypatch):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    receiver = Receiver([503])
    sent: list = []
    monkeypatch.setattr(dispatch, "send_webhook", lambda *a, **kw: sent.append(a))
    plan = plan_agent_run({"env_id": "miniwob", "model": "m", "task_ids": ["miniwob.click-test"],
                           "webhook_url": receiver.url, "endpoint": {"url": "http://127.0.0.1:9"}},
                          organization=tenant_a.org)
    evaluation = lifecycle.create_evaluation(plan=plan, raw_body="{}", organization=tenant_a.org)
    lifecycle.cancel_evaluation(evaluation)
    sent.clear()
    delivery = webhooks.deliver(evaluation.pk, settings.RLMESH_WEBHOOK_MAX_ATTEMPTS)
    assert delivery.status_code == 503 and delivery.next_attempt_at is None and sent == []


def test_a_rotated_secret_differs(db, tenant_a):
    first = webhooks.webhook_secret(tenant_a.org)
    assert webhooks.webhook_secret(tenant_a.org) == first
    assert webhooks.rotate_secret(tenant_a.org) != first
