"""One verdict rule for agent rollouts (evaluations.domain.verdicts), driven through every place that says whether a
rollout passed: the recorder that writes the episode, the /agents status (results and summary), /v1 scores,
episodes and metrics, the dashboard (the run's Overview, the run list's headline, the transcript page), the output
bundle and the webhook body.

Each row of TABLE is a reason a rollout ended, as the worker hands it to the recorder (the last step's info and the
episode fields the session loop built), with what every place must say: ``(task_outcome, task_passed, reward,
counted_as, stop_condition)``. A rollout without evidence has ``task_passed`` and ``reward`` null, is counted by its
reason, and enters no success rate, pass@k or interval."""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass, field

import pytest
from standardwebhooks import Webhook

from evaluations import webhooks
from evaluations.agents.tools import ENDPOINT_ERROR_TOOL
from evaluations.choices import EpisodeStatus, EvaluationStatus, StopCondition
from evaluations.domain.verdicts import COUNTED_AS, rollout_verdict
from evaluations.models import Episode, Evaluation
from evaluations.planning.agent_runs import plan_agent_run
from evaluations import dispatch
from evaluations.runs import lifecycle
from evaluations.runs.outcome import error_fields
from evaluations.runs.transcripts import TranscriptRecorder
from tests.agents.test_agent_records import Receiver

OBS = {"goal": "Click the button.", "dom": "[4] button 'Ok'", "error": "", "raw": "{}", "meta": "{}"}
CLICK = json.dumps({"tool": "click", "arguments": {"ref": 4}})
CHECK = {"name": "cart", "kind": "state", "passed": True, "score": 1.0, "detail": "the cart holds it"}
SHOP_PASSED = {"verdict": "state", "verifiers": [CHECK], "is_success": True, "raw_reward": 1.0}
OPEN = {"verdict": "unverified", "verifiers": [], "is_success": None, "raw_reward": 0.0}


def _done(**fields) -> dict:
    return {"status": EpisodeStatus.COMPLETED, "seed": 0, "steps": 1, "reward": 0.0, "success": False,
            "terminated": True, "truncated": False, "stop_condition": StopCondition.TERMINATED, **fields}


WALL = {"terminated": False, "truncated": True, "stop_condition": StopCondition.WALL_TIME}


@dataclass
class Row:
    """How the rollout ended: ``action``, ``info`` and ``reward`` of its one step, the fields the loop built, or
    ``recorded`` (a record written without the recorder) / ``cancelled`` (nothing recorded)."""

    expect: tuple
    action: str = CLICK
    info: dict = field(default_factory=dict)
    reward: float = 0.0
    fields: dict | None = None
    broke: bool = False
    recorded: dict | None = None
    cancelled: bool = False


def _endpoint(failure: str) -> str:
    return json.dumps({"tool": ENDPOINT_ERROR_TOOL, "failure": failure,
                       "arguments": {"message": f"{failure.replace('_', ' ')}: HTTP 5xx"}})


TABLE = {
    "passed": Row(("pass", True, 1.0, "scored", "terminal_action"),
                  info={"page_ended": True, "raw_reward": 1.0}, reward=1.0, fields=_done(reward=1.0, success=True)),
    "failed": Row(("fail", False, 0.0, "scored", "terminal_action"),
                  info={"page_ended": True, "raw_reward": -1.0}, reward=-1.0, fields=_done(reward=-1.0)),
    "step cap": Row(("fail", False, 0.0, "scored", "max_steps"), fields=_done(
        terminated=False, truncated=True, stop_condition=StopCondition.MAX_STEPS)),
    "page timer": Row(("timeout", False, 0.0, "scored", "timeout"),
                      info={"timed_out": True, "raw_reward": -1.0}, reward=-1.0, fields=_done(reward=-1.0)),
    "wall time, checks passed": Row(("timeout", False, 0.0, "scored", "timeout"),
                                    info=SHOP_PASSED, fields=_done(success=True, **WALL)),
    "unverified": Row(("unverified", None, None, "unverified", "terminal_action"),
                      info={**OPEN, "terminal_action": True}, fields=_done(success=None)),
    "unverified, wall time": Row(("unverified", None, None, "unverified", "timeout"),
                                 info=OPEN, fields=_done(success=None, **WALL)),
    "rate limited": Row(("error", None, None, "rate_limited", "rate_limited"), action=_endpoint("rate_limited"),
                        info={**SHOP_PASSED, "endpoint_error": "rate limited"}, fields=_done(
                            success=True, terminated=False, truncated=True)),
    "endpoint unavailable": Row(("error", None, None, "endpoint_unavailable", "endpoint_unavailable"),
                                action=_endpoint("endpoint_unavailable"), info={"endpoint_error": "down"},
                                fields=_done(terminated=False, truncated=True)),
    "env error": Row(("error", None, None, "error", "error"), info={"tool_result": "clicked [4]"}, broke=True),
    "servers never started": Row(("error", None, None, "error", "error"),
                                 recorded=error_fields({"seed": 0}, "not run: servers failed to start: boom")),
    "cancelled": Row(("error", None, None, "cancelled", "cancelled"), cancelled=True),
}


def test_the_rule_is_the_table():
    """The one function, row by row, from the plain values the read side passes it."""
    cases = {
        ("pass", True, 1.0, "scored"): rollout_verdict(success=True, reward=1.0),
        ("fail", False, 0.0, "scored"): rollout_verdict(success=False, reward=-1.0),
        ("timeout", False, 0.0, "scored"): rollout_verdict(success=True, reward=0.0, timed_out=True),
        ("unverified", None, None, "unverified"): rollout_verdict(success=None, reward=None, timed_out=True),
        ("error", None, None, "rate_limited"): rollout_verdict(errored=True, endpoint_failure="rate_limited",
                                                                success=True, reward=1.0),
        ("error", None, None, "error"): rollout_verdict(errored=True, success=False, reward=0.0),
        ("error", None, None, "cancelled"): rollout_verdict(ran=False),
    }
    for expected, verdict in cases.items():
        assert (verdict.outcome, verdict.passed, verdict.reward, verdict.counted_as) == expected
        assert verdict.scored == (expected[3] == "scored")
    assert {row.expect[3] for row in TABLE.values()} == set(COUNTED_AS)


def _run(tenant, receiver: Receiver, row: Row) -> Evaluation:
    """An agent run of one rollout that ended as ``row`` says, ended (so its webhook goes)."""
    plan = plan_agent_run({"env_id": "miniwob", "model": "m", "task_ids": ["miniwob.click-test"],
                           "webhook_url": receiver.url, "endpoint": {"url": "http://127.0.0.1:9"}},
                          organization=tenant.org)
    evaluation = lifecycle.create_evaluation(plan=plan, raw_body="{}", organization=tenant.org, creator=tenant.user)
    if row.cancelled:
        return lifecycle.cancel_evaluation(evaluation)
    workload = evaluation.workloads.get()
    fields = row.recorded
    if fields is None:
        rec = TranscriptRecorder(evaluation=evaluation, workload=workload, index=0)
        rec.on_reset(OBS, {}, seed=0)
        rec.on_step(1, row.action, OBS, row.reward, False, False, row.info, predict_ms=1.0, step_ms=1.0)
        if row.broke:
            rec.on_error(RuntimeError("the env died"))
        fields = rec.finish(error_fields({"seed": 0}, "episode failed: RuntimeError: the env died") if row.broke
                            else row.fields)
    Episode.objects.create(evaluation=evaluation, workload=workload, index=0, **fields)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=EvaluationStatus.COMPLETED, completed_episodes=1)
    return Evaluation.objects.get(pk=evaluation.pk)


def _verdict(result: dict) -> tuple:
    return tuple(result[k] for k in ("task_outcome", "task_passed", "reward", "counted_as", "stop_condition"))


def _counts(summary: dict) -> dict:
    return {"scored": summary["scored"], "unverified": summary["unverified"], **summary["endpoint_failures"],
            "error": summary["errors"], "cancelled": summary["cancelled"]}


def _check_status(doc: dict, expect: tuple) -> None:
    (result,) = doc["evaluations"][0]["results"]
    assert _verdict(result) == expect
    summary, scored = doc["summary"], expect[3] == "scored"
    assert _counts(summary) == {kind: int(kind == expect[3]) for kind in COUNTED_AS}
    assert (summary["passed"], summary["success_rate"]) == ((int(bool(expect[1])), float(bool(expect[1])))
                                                           if scored else (0, None))
    assert (summary["success_rate_ci"] is None, summary["pass_k"] is None) == (not scored, not scored)
    if not scored:
        assert result["verifiers"] == [] or expect[3] == "unverified"  # no check decided an errored rollout


def _check_v1(api, evaluation: Evaluation, expect: tuple) -> None:
    scored, errored = expect[3] == "scored", expect[3] not in ("scored", "unverified", "cancelled")
    groups = api.get(f"/v1/evaluations/{evaluation.public_id}/scores?groupBy=task").json()["groups"]
    if expect[3] == "cancelled":
        assert all(g["episodes"] == 0 and g["successRate"] is None for g in groups)
        return
    (group,) = groups
    assert (group["episodes"], group["errors"], group["successUndefined"]) == \
        (int(not errored), int(errored), int(expect[3] == "unverified"))
    assert group["successRate"] == (float(expect[1]) if scored else None)
    (episode,) = api.get(f"/v1/evaluations/{evaluation.public_id}/episodes").json()["items"]
    assert episode["success"] == expect[1] and (episode["reward"] is None) == (not scored)
    agent = api.get(f"/v1/evaluations/{evaluation.public_id}/metrics").json()["agent"]
    assert (agent["passed"], agent["unverified"]) == (int(expect[1] is True), int(expect[3] == "unverified"))


def _check_dashboard(web, evaluation: Evaluation, expect: tuple) -> None:
    scored = expect[3] == "scored"
    page = web.get(f"/evaluations/{evaluation.public_id}").content.decode()
    outcomes = re.sub(r"\s+", " ", re.search(r'<p id="agent-outcomes">(.*?)</p>', page, re.S)[1])
    assert f"<strong>{int(bool(expect[1]))}/{int(scored)}</strong> scored rollouts passed" in outcomes
    assert ('id="agent-success-rate"' in outcomes) == scored
    words = {"unverified": "1 unverified", "rate_limited": "1 rate limited, 0 endpoint unavailable",
             "endpoint_unavailable": "0 rate limited, 1 endpoint unavailable", "error": "1 other errors",
             "cancelled": "1 not run (cancelled)"}
    if not scored:
        assert words[expect[3]] in outcomes
    listed = web.get("/evaluations").content.decode()  # the run list's headline: the success rate of scored ones
    headline = re.search(r'<td class="headlines">(.*?)</td>', listed, re.S)[1]
    assert re.sub(r"<.*?>", "", headline).split(" [")[0] == (f"{float(expect[1]):.2f}" if scored else "—")
    episode = evaluation.episodes.exclude(transcript="").first()
    if episode is not None:
        page = web.get(f"/evaluations/{evaluation.public_id}/episodes/{episode.pk}/transcript").content.decode()
        assert f'data-counted-as="{expect[3]}"' in page


@pytest.mark.django_db
@pytest.mark.parametrize("reason", list(TABLE))
def test_every_place_says_what_the_table_says(reason, api, tenant_a, client, settings, monkeypatch):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    monkeypatch.setattr(dispatch, "send_webhook", lambda *a, **kw: None)
    receiver = Receiver([])
    expect = TABLE[reason].expect
    evaluation = _run(tenant_a, receiver, TABLE[reason])
    doc = api.get(f"/agents/evaluations/run/{evaluation.run_id}/status").json()
    _check_status(doc, expect)
    _check_v1(api, evaluation, expect)
    client.login(username=tenant_a.user.username, password=f"pw-{tenant_a.user.username}")
    _check_dashboard(client, evaluation, expect)
    bundle = api.get(f"/agents/outputs/runs/{evaluation.run_id}")
    with zipfile.ZipFile(io.BytesIO(b"".join(bundle.streaming_content))) as z:
        _check_status(json.loads(z.read("results.json")), expect)
    assert webhooks.deliver(evaluation.pk, 1).status_code == 200
    ((headers, raw),) = receiver.received
    _check_status(Webhook(webhooks.webhook_secret(tenant_a.org)).verify(raw, headers), expect)
