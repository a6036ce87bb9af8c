"""Agent runs in the dashboard: usage and webhook deliveries on the run's page, a rollout's transcript step by step
with its screenshots, and the webhook secret in Settings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluations.choices import EpisodeStatus, Role, StopCondition
from evaluations.models import Episode, WebhookDelivery
from evaluations.planning.agent_runs import plan_agent_run
from evaluations.runs.lifecycle import create_evaluation
from evaluations.runs.transcripts import TranscriptRecorder
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
SECRET = "sk-dashboard-do-not-leak"


@pytest.fixture
def web(client, tenant_a):
    client.login(username=tenant_a.user.username, password=f"pw-{tenant_a.user.username}")
    return client


@pytest.fixture
def run(tenant_a, settings):
    """An agent run with one recorded rollout whose transcript the recorder wrote (with a screenshot)."""
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    plan = plan_agent_run({"env_id": "miniwob", "model": "my-agent", "task_ids": ["miniwob.click-test"],
                           "webhook_url": "http://127.0.0.1:9/hook",
                           "endpoint": {"url": "http://127.0.0.1:9", "key": SECRET}}, organization=tenant_a.org)
    evaluation = create_evaluation(plan=plan, raw_body="{}", organization=tenant_a.org, creator=tenant_a.user)
    workload = evaluation.workloads.get()
    rec = TranscriptRecorder(evaluation=evaluation, workload=workload, index=0, key=SECRET)
    shot = np.full((210, 160, 3), 200, np.uint8)
    rec.on_reset({"goal": "Click the button.", "dom": "[4] button 'Ok'", "error": "", "screenshot": shot}, {}, seed=0)
    trace = {"protocol": "openai-chat", "latencyMs": 3.0, "overheadMs": 0.4, "attempts": 1, "backoffMs": 0,
             "usage": {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45}, "error": None,
             "request": {"headers": {"Authorization": "Bearer ***"}, "body": {"messages": [{"content": "GOAL"}]}},
             "reply": {"status": 200, "content": None, "tool_calls": [{"function": {"name": "click"}}]}}
    rec.on_step(1, json.dumps({"tool": "click", "arguments": {"ref": 4}, "trace": trace}),
                {"goal": "Click the button.", "dom": "[4] button 'Ok' focused", "error": "", "screenshot": shot},
                1.0, True, False, {"tool_result": "clicked [4]; the page ended the episode (raw reward 1)",
                                   "raw_reward": 1.0, "page_ended": True}, predict_ms=4.0, step_ms=20.0)
    fields = rec.finish({"seed": 0, "status": EpisodeStatus.COMPLETED, "reward": 1.0, "success": True, "steps": 1,
                         "terminated": True, "stop_condition": StopCondition.TERMINATED})
    Episode.objects.create(evaluation=evaluation, workload=workload, index=0, **fields)
    WebhookDelivery.objects.create(evaluation=evaluation, attempt=1, webhook_id="msg_x", url=evaluation.webhook_url,
                                   status_code=500, error="HTTP 500: boom", duration_ms=3.0)
    return evaluation


def test_the_run_page_shows_usage_and_the_delivery_log(web, run):
    page = web.get(f"/evaluations/{run.public_id}").content.decode()
    assert 'id="agent-summary"' in page and 'id="agent-total-tokens">45<' in page
    assert 'id="webhook-deliveries"' in page and "HTTP 500: boom" in page
    assert SECRET not in page


def test_the_episodes_tab_links_each_rollout_to_its_transcript(web, run):
    episode = run.episodes.get()
    page = web.get(f"/evaluations/{run.public_id}/episodes").content.decode()
    assert f'/evaluations/{run.public_id}/episodes/{episode.pk}/transcript' in page


def test_the_transcript_page_shows_each_step(web, run):
    episode = run.episodes.get()
    r = web.get(f"/evaluations/{run.public_id}/episodes/{episode.pk}/transcript")
    page = r.content.decode()
    assert r.status_code == 200 and 'data-step="0"' in page and 'data-step="1"' in page
    assert "GOAL: Click the button." in page and "clicked [4]" in page and 'class="tool-name">click<' in page
    assert "Bearer ***" in page and SECRET not in page
    shot = web.get(f"/evaluations/{run.public_id}/episodes/{episode.pk}/transcript/step-001.png")
    assert shot.status_code == 200 and b"".join(shot.streaming_content).startswith(b"\x89PNG")
    assert web.get(f"/evaluations/{run.public_id}/episodes/{episode.pk}/transcript/..%2Fx.png").status_code == 404


def test_another_organizations_transcript_is_a_404(client, run, tenant_b):
    client.login(username=tenant_b.user.username, password=f"pw-{tenant_b.user.username}")
    episode = run.episodes.get()
    assert client.get(f"/evaluations/{run.public_id}/episodes/{episode.pk}/transcript").status_code == 404


def test_settings_shows_and_rotates_the_webhook_secret_for_admins(web, tenant_a, client):
    page = web.get("/settings").content.decode()
    tenant_a.org.refresh_from_db()
    secret = tenant_a.org.webhook_secret
    assert secret.startswith("whsec_") and secret in page
    assert web.post("/settings/webhook-secret/rotate").status_code == 302
    tenant_a.org.refresh_from_db()
    assert tenant_a.org.webhook_secret != secret
    make_user("mia", tenant_a.org, Role.MEMBER)
    client.login(username="mia", password="pw-mia")
    assert tenant_a.org.webhook_secret not in client.get("/settings").content.decode()
    assert client.post("/settings/webhook-secret/rotate").status_code == 403


def test_the_run_page_shows_pass_at_k_and_counts_endpoint_failures_apart(web, tenant_a, settings):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    plan = plan_agent_run({"env_id": "miniwob", "model": "my-agent", "task_ids": ["miniwob.click-test",
                                                                                  "miniwob.click-button"],
                           "rollouts_per_example": 3, "endpoint": {"url": "http://127.0.0.1:9"}},
                          organization=tenant_a.org)
    evaluation = create_evaluation(plan=plan, raw_body="{}", organization=tenant_a.org, creator=tenant_a.user)
    usage = {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45, "cached_tokens": 30,
             "reasoning_tokens": 2}
    ok = {"status": EpisodeStatus.COMPLETED, "reward": 1.0, "success": True, "steps": 2, "terminated": True,
          "stop_condition": StopCondition.TERMINATED,
          "agent": {"ending": "finish", "usageReported": True, "usage": usage, "usageMissingSteps": 1,
                    "endpointMs": 10.0, "retryMs": 250.0, "retryAfterMs": 200.0}}
    bad = {**ok, "reward": 0.0, "success": False}
    limited = {"status": EpisodeStatus.ERROR, "steps": 1, "stop_condition": StopCondition.ERROR,
               "error": "rate limited: HTTP 429", "agent": {"ending": "rate_limited", "endpointFailure": "rate_limited",
                                                            "endpointError": "rate limited: HTTP 429"}}
    for w, rows in enumerate([[ok, bad, bad], [ok, ok, limited]]):
        workload = evaluation.workloads.get(index=w)
        for index, fields in enumerate(rows):
            Episode.objects.create(evaluation=evaluation, workload=workload, index=index, seed=index, **fields)
    page = web.get(f"/evaluations/{evaluation.public_id}").content.decode()
    assert 'id="agent-pass-k"' in page and '<tr data-k="2">' in page and 'data-k="3"' not in page  # min n = 2
    # k = 2: task 1: 1 − C(2,2)/C(3,2) = 2/3, task 2: 1 → 0.833; pass^2: 0 and 1 → 0.500.
    assert '<td class="pass-at-k">0.833</td>' in page and '<td class="pass-hat-k">0.500</td>' in page
    assert "1 rate limited, 0 endpoint unavailable" in page and "<strong>3/5</strong> scored rollouts passed" in page
    assert 'id="agent-cached-tokens">150<' in page and "partial: 5 steps answered without usage" in page
    assert 'id="agent-retry-ms">1250 ms<' in page
