"""Deadlines hold during an endpoint call (issue 28, item 2): a call still running when the episode's time is up is
cut off (its connection closed, seen by the endpoint), its action is never executed, and the rollout ends
``timeout`` (the one name, in the results and the transcript) with the transcript up to that point.

The endpoints are real, slow loopback servers: one that answers only after ``DELAY`` seconds (unless the client
hangs up first) and one that dribbles a never-ending body, a byte at a time (a per-read timeout never fires)."""

from __future__ import annotations

import json
import select
import socket
import time

import pytest
from django.core.files.storage import default_storage

from evaluations.agents.bridge import ALLOW_PRIVATE_ENV, EndpointBridge
from evaluations.agents.transport import DEADLINE, EndpointConfig, HttpAgent, OpenAIChat, call_with_retries
from evaluations.reports.agents import status_document

from tests.support.loopback import LoopbackServer

from .test_agent_runs_engine import request, run
from .test_bridge import obs

#: How long the slow endpoint takes to answer: far beyond the episode caps used here.
DELAY = 25.0
FINISH = {"tool": "finish", "arguments": {"reason": "answered late"}}


def late_answer(path: str) -> bytes:
    """The slow endpoint's answer: a ``finish`` call (chat completion or HTTP agent reply)."""
    if path.endswith("/chat/completions"):
        message = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "finish", "arguments": json.dumps(FINISH["arguments"])}}]}
        return json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "finish_reason": "tool_calls", "message": message}]}).encode()
    return json.dumps(FINISH).encode()


class SlowEndpoint(LoopbackServer):
    """A loopback HTTP endpoint that answers each request after ``DELAY`` s (``dribble``: sends headers, then a
    byte every 0.2 s, forever). ``calls`` holds per request ``{"path", "arrived", "closed", "answered"}`` (monotonic
    seconds; ``closed``: when the client hung up, None if it never did)."""

    def __init__(self, dribble: bool = False):
        self.dribble, self.calls = dribble, []
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                body += conn.recv(65536)
            call = {"path": head.split(b" ")[1].decode(), "arrived": time.monotonic(), "closed": None,
                    "answered": None}
            self.calls.append(call)
            if self.dribble:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
            end = call["arrived"] + DELAY
            while time.monotonic() < end:
                readable, _, _ = select.select([conn], [], [], 0.2)
                if readable and not conn.recv(1, socket.MSG_PEEK):
                    call["closed"] = time.monotonic()
                    return
                if self.dribble:
                    try:
                        conn.sendall(b" ")
                    except OSError:
                        call["closed"] = time.monotonic()
                        return
            answer = late_answer(call["path"])
            call["answered"] = time.monotonic()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(answer)).encode() + b"\r\n\r\n" + answer)


@pytest.fixture
def slow():
    servers: list[SlowEndpoint] = []

    def start(dribble: bool = False) -> SlowEndpoint:
        servers.append(SlowEndpoint(dribble))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


# -- the call itself ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dribble", [False, True], ids=["silent", "dribbling"])
@pytest.mark.parametrize("transport", [OpenAIChat, HttpAgent])
def test_a_call_is_cut_off_at_the_deadline_and_its_connection_closed(transport, dribble, slow):
    server = slow(dribble)
    cfg = EndpointConfig(url=server.url, use_openai_chat=transport is OpenAIChat, timeout_seconds=DELAY * 2,
                         max_retries=3, backoff_seconds=0.1, allow_private=True)
    sender = transport(cfg)
    t0 = time.monotonic()
    deadline = t0 + 1.5
    reply, stats = call_with_retries(lambda: sender.send({"model": "m", "messages": []}, deadline - time.monotonic()),
                                     cfg, deadline=deadline)
    took = time.monotonic() - t0
    assert reply is None and stats["failure"] == DEADLINE and stats["attempts"] == 1, stats
    assert 1.4 < took < 3.0, took
    assert "time ran out" in stats["error"]
    time.sleep(0.5)  # the server polls every 0.2 s
    (call,) = server.calls
    assert call["answered"] is None and call["closed"] is not None and call["closed"] - t0 < 3.0


def test_the_bridge_ends_a_call_when_the_episodes_time_is_up(slow, monkeypatch):
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "true")  # the slow endpoint is on loopback
    server = slow()
    bridge = EndpointBridge.from_config(url=server.url, timeout_seconds=DELAY * 2, max_retries=3)
    observation = obs(step=0)
    observation["meta"] = json.dumps({**json.loads(observation["meta"]), "timeLeftSeconds": 1.5})
    t0 = time.monotonic()
    action = json.loads(bridge.predict(observation))
    assert time.monotonic() - t0 < 3.0
    assert (action["tool"], action["error_code"]) == (None, DEADLINE) and action["trace"]["failure"] == DEADLINE
    time.sleep(0.5)
    assert server.calls[0]["closed"] is not None and server.calls[0]["answered"] is None


# -- a rollout on the engine -------------------------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.browser_env
@pytest.mark.usefixtures("chromium")
@pytest.mark.parametrize("chat", [True, False], ids=["chat", "http-agent"])
def test_a_rollout_ends_timeout_at_its_cap_and_the_late_action_is_never_executed(chat, tenant_a, slow, settings,
                                                                                   monkeypatch):
    from tests.support.agents import run_agent_shards_inline

    run_agent_shards_inline(monkeypatch, settings)
    cap = 10.0
    settings.RLMESH_EPISODE_TIMEOUT = cap
    settings.RLMESH_AGENT_CALL_TIMEOUT = DELAY * 2
    settings.RLMESH_AGENT_CALL_RETRIES = 0
    server = slow()
    evaluation = run(tenant_a, request(server.url, ["miniwob.click-test"], use_openai_chat=chat))
    doc = status_document(evaluation, deliveries=False)
    (result,) = doc["evaluations"][0]["results"]
    assert (result["task_outcome"], result["stop_condition"]) == ("timeout", "timeout"), result
    episode = evaluation.episodes.get()
    assert episode.wall_ms < (cap + 3) * 1000, episode.wall_ms  # not the agent's DELAY
    events = json.loads(default_storage.open(episode.transcript.name).read())["events"]
    kinds = [e["type"] for e in events]
    assert "tool" not in kinds, kinds  # the late finish was never executed
    timeout = next(e for e in events if e["type"] == "error")
    assert timeout["kind"] == "timeout" and "not executed" in timeout["message"]
    assert kinds[-1] == "score" and events[-1]["stopCondition"] == "timeout" and events[-1]["ending"] == "timeout"
    time.sleep(0.5)
    assert server.calls and all(c["closed"] is not None and c["answered"] is None for c in server.calls), server.calls
