"""The judge of open runs (one chat call, read from a tool call or the reply text, never a guessed pass) and how
unverified rollouts are scored (outside every rate and mean, not as failures)."""

from __future__ import annotations

import json

from evaluations.agents.judge import judge_rollout
from evaluations.agents.transport import EndpointConfig
from evaluations.domain.scoring import group_scores, summarize

from ..agents.conftest import free_port

EVENTS = [{"type": "reset", "step": 0, "goal": "g"}, {"type": "observation", "step": 0, "text": "GOAL: g\nDOM:\n[1] a"},
          {"type": "tool", "step": 1, "tool": "click", "arguments": {"ref": 1}, "result": "clicked [1]", "error": None},
          {"type": "observation", "step": 1, "text": "DOM:\n[1] main id=page-cart"}]


def completion(message: dict) -> dict:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "j",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", **message}}]}


def cfg(url: str, **kw) -> EndpointConfig:
    return EndpointConfig(url=url, model="judge-x", max_retries=0, timeout_seconds=5, allow_private=True, **kw)


def test_the_judge_gets_the_task_state_and_transcript_and_answers_in_text(serve_json):
    url = serve_json(lambda path, body: completion({"content": 'Verdict: {"passed": false, "reason": "cart empty"}'}))
    verifier, trace = judge_rollout(cfg(url, additional_params={"temperature": 0}), task="Buy a lamp.",
                                    state={"cart": []}, events=EVENTS)
    assert verifier == {"name": "judge", "kind": "judge", "passed": False, "score": 0.0, "detail": "cart empty"}
    (call,) = serve_json.servers[-1].calls
    assert call["path"] == "/v1/chat/completions" and call["body"]["temperature"] == 0
    assert call["body"]["tools"][0]["function"]["name"] == "verdict" and call["body"]["model"] == "judge-x"
    payload = json.loads(call["body"]["messages"][1]["content"])
    assert payload["task"] == "Buy a lamp." and payload["final_state"] == {"cart": []}
    assert payload["transcript"] == [{"step": 1, "tool": "click", "arguments": {"ref": 1}, "result": "clicked [1]",
                                      "error": None}]
    assert payload["final_page"] == "DOM:\n[1] main id=page-cart" and trace["request"]["headers"] == {}


def test_no_readable_verdict_or_no_judge_decides_nothing(serve_json):
    url = serve_json(lambda path, body: completion({"content": "I think it went fine."}))
    verifier, _ = judge_rollout(cfg(url), task="t", state={}, events=EVENTS)
    assert verifier["passed"] is None and verifier["score"] is None and "no verdict" in verifier["detail"]
    verifier, trace = judge_rollout(cfg(f"http://127.0.0.1:{free_port()}", key="sk-j"), task="t", state={}, events=[])
    assert verifier["passed"] is None and verifier["detail"].startswith("the judge could not be reached")
    assert trace["request"]["headers"] == {"Authorization": "Bearer ***"} and trace["error"]


def test_the_judge_uses_one_client_for_all_its_attempts_and_closes_it(monkeypatch):
    from evaluations.agents import judge

    made, closed = [], []

    class Spy(judge.OpenAIChat):
        def __init__(self, c):
            made.append(self)
            super().__init__(c)

        def close(self):
            closed.append(self)
            super().close()

    monkeypatch.setattr(judge, "OpenAIChat", Spy)
    monkeypatch.setattr("evaluations.agents.transport.time.sleep", lambda s: None)
    config = EndpointConfig(url=f"http://127.0.0.1:{free_port()}", model="j", max_retries=2, timeout_seconds=5,
                            allow_private=True)
    _, trace = judge_rollout(config, task="t", state={}, events=[])
    assert trace["attempts"] == 3 and len(made) == 1 and closed == made  # a refused connection is retried


def row(success, reward=1.0, status="completed"):
    return {"status": status, "success": success, "reward": reward, "steps": 3, "taskId": "t", "model": "m"}


def test_unverified_episodes_are_counted_apart_not_as_failures():
    out = summarize([row(True), row(None, None), row(None, None), row(False, 0.0), row(None, None, "error")])
    # Unverified rollouts are completed episodes without a verdict: in episodes, in successUndefined, never failures.
    out_ = (out["episodes"], out["successes"], out["successRate"], out["successUndefined"], out["errors"])
    assert out_ == (4, 1, 0.5, 2, 1)
    assert out["meanReward"] == 0.5  # no reward to average for the unverified ones
    only = summarize([row(None, None)])
    assert (only["episodes"], only["successRate"], only["meanReward"], only["successUndefined"]) == (1, None, None, 1)
    (group,) = group_scores([row(None, None), {**row(True), "taskId": "u"}], "model")
    assert group["successUndefined"] == 1 and group["tasks"] == 2 and "iqmSuccessRate" not in group
