"""The bridge in-process against real local HTTP servers (a scripted one and the reference agent)."""

from __future__ import annotations

import json
import queue
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from evaluations.agents.bridge import ALLOW_PRIVATE_ENV, KEY_ENV, EndpointBridge, redact
from evaluations.agents.reference_agent import make_server
from evaluations.agents.transport import EndpointConfig, EndpointError, Reply, call_with_retries, retry_after_seconds

KEY = "sk-unit-" + "7f3a9c" * 4
DOM = "[1] body\n  [2] div id=wrap\n    [3] button 'Ok'"


def obs(step: int = 0, episode: str = "ep-1", error: str = "", screenshot: bool = False, **extra) -> dict:
    raw = {"utterance": 'Click on the "Ok" button.', "fields": [], "dom_elements": [
        {"ref": 3, "parent": 0, "tag": "BUTTON", "text": "Ok", "value": "", "id": "", "classes": "", "focused": False}]}
    out = {"goal": 'Click on the "Ok" button.', "dom": DOM, "error": error, "raw": json.dumps(raw),
           "meta": json.dumps({"episode": episode, "step": step, "task": "miniwob.click-button",
                               "tools": ["click", "wait", "finish"]}), **extra}
    if screenshot:
        out["screenshot"] = np.full((210, 160, 3), 200, np.uint8)
    return out


class Scripted(BaseHTTPRequestHandler):
    """Answers with queued (status, headers, body) and records every request."""

    protocol_version = "HTTP/1.1"
    replies: queue.Queue
    seen: list

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.seen.append({"path": self.path, "headers": headers, "body": body, "t": time.monotonic()})
        status, headers, payload = self.replies.get_nowait()
        data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
        self.send_response(status)
        for k, v in {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    handler = type("H", (Scripted,), {"replies": queue.Queue(), "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    server.handler = handler
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def reference():
    server = make_server()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def completion(content=None, tool_calls=None, usage=True) -> dict:
    message = {"role": "assistant", "content": content, **({"tool_calls": tool_calls} if tool_calls else {})}
    out = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
           "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    if usage:
        out["usage"] = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    return out


def bridge(monkeypatch, key: str | None = KEY, **config) -> EndpointBridge:
    if key is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "true")  # the scripted endpoints are on loopback
    return EndpointBridge.from_config(**{"max_retries": 2, "backoff_seconds": 0.05, "timeout_seconds": 5, **config})


def act(b: EndpointBridge, observation: dict) -> dict:
    text = b.predict(observation)
    assert KEY not in text
    return json.loads(text)


def test_it_solves_over_chat_with_tools_and_keeps_the_conversation(monkeypatch, reference):
    b = bridge(monkeypatch, url=reference, model="ref", additional_params={"temperature": 0})
    first = act(b, obs())
    assert (first["tool"], first["arguments"]) == ("click", {"ref": 3})
    trace = first["trace"]
    assert trace["protocol"] == "openai-chat" and trace["request"]["url"] == reference + "/v1/chat/completions"
    assert trace["request"]["headers"] == {"Authorization": "Bearer ***"}
    body = trace["request"]["body"]
    assert body["model"] == "ref" and body["temperature"] == 0
    assert [t["function"]["name"] for t in body["tools"]] == ["click", "wait", "finish"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == f'GOAL: Click on the "Ok" button.\nDOM:\n{DOM}'
    assert set(trace["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens",
                                   "reasoning_tokens"}
    assert (trace["usage"]["cached_tokens"], trace["usage"]["reasoning_tokens"]) == (None, None)  # not sent: unknown
    assert trace["attempts"] == 1 and trace["error"] is None and trace["latencyMs"] > 0
    second = act(b, obs(step=1, error="ERROR: no element with ref 9"))
    messages = second["trace"]["request"]["body"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[3] == {"role": "tool", "tool_call_id": messages[2]["tool_calls"][0]["id"],
                           "content": f"ERROR: no element with ref 9\nDOM:\n{DOM}"}
    # step 0 of the same episode id starts over; another episode has its own history
    assert len(act(b, obs(step=0))["trace"]["request"]["body"]["messages"]) == 2
    assert len(act(b, obs(step=0, episode="ep-2"))["trace"]["request"]["body"]["messages"]) == 2


def test_without_tool_definitions_the_call_is_read_from_the_reply_text(monkeypatch, reference):
    b = bridge(monkeypatch, url=reference + "/v1", send_tool_definitions=False)
    action = act(b, obs())
    assert (action["tool"], action["arguments"]) == ("click", {"ref": 3})
    body = action["trace"]["request"]["body"]
    assert "tools" not in body and "click(ref: integer)" in body["messages"][0]["content"]
    assert action["trace"]["request"]["url"] == reference + "/v1/chat/completions"
    follow = act(b, obs(step=1))["trace"]["request"]["body"]["messages"]
    assert [m["role"] for m in follow] == ["system", "user", "assistant", "user"]


def test_raw_observations_and_the_http_agent_protocol(monkeypatch, reference):
    raw = act(bridge(monkeypatch, url=reference, use_wrapper=False), obs())
    assert raw["tool"] == "click" and json.loads(raw["trace"]["request"]["body"]["messages"][1]["content"])
    http = act(bridge(monkeypatch, url=reference + "/agent/step", use_openai_chat=False), obs())
    assert (http["tool"], http["arguments"]) == ("click", {"ref": 3})
    body = http["trace"]["request"]["body"]
    assert set(body) == {"task", "episode", "step", "goal", "observation", "history", "tools"}
    assert body["observation"] == f"DOM:\n{DOM}" and body["history"] == [] and http["trace"]["usage"]


def test_screenshots_go_as_images_but_traces_keep_a_placeholder(monkeypatch, scripted):
    scripted.handler.replies.put((200, {}, completion(content='{"tool": "click", "arguments": {"ref": 3}}')))
    action = act(bridge(monkeypatch, url=scripted.url, minimal_observation=False), obs(screenshot=True))
    sent = scripted.handler.seen[0]["body"]["messages"][1]["content"]
    assert sent[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    traced = action["trace"]["request"]["body"]["messages"][1]["content"][1]["image_url"]["url"]
    assert traced.startswith("<screenshot: image/png, ") and traced.endswith(" bytes>")
    assert len(json.dumps(action)) < 3000


def call(name: str, arguments: str, id: str = "c1") -> dict:  # noqa: A002 - OpenAI's key
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_reply_without_a_usable_call_is_a_null_tool(monkeypatch, scripted):
    b = bridge(monkeypatch, url=scripted.url)
    scripted.handler.replies.put((200, {}, completion(content="I am not sure what to do.", usage=False)))
    action = act(b, obs())
    assert (action["tool"], action["error_code"]) == (None, "no_tool_call")
    assert action["error"].startswith("no tool call in the reply") and action["trace"]["usage"] is None
    scripted.handler.replies.put((200, {}, completion(tool_calls=[call("click", '{"ref": "x"}')])))
    action = act(b, obs(step=1))
    assert action == {**action, "tool": None, "error": "click: argument 'ref' must be an integer, got \"x\"",
                      "error_code": "invalid_tool_call"}
    scripted.handler.replies.put((200, {}, completion(tool_calls=[call("click", '{"ref": 3')])))
    assert act(b, obs(step=2))["error_code"] == "unparsed_tool_call"
    calls = [call("click", '{"ref": 3}', "a"), call("finish", "{}", "b")]
    scripted.handler.replies.put((200, {}, completion(tool_calls=calls)))
    action = act(b, obs(step=3))
    assert (action["tool"], action["error_code"]) == (None, "multiple_tool_calls")  # neither call was executed
    scripted.handler.replies.put((200, {}, completion(tool_calls=[call("finish", "{}")])))
    messages = act(b, obs(step=4))["trace"]["request"]["body"]["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in messages[-2:]] == [("tool", "a"), ("tool", "b")]
    assert messages[-1]["content"].startswith("ERROR: only one tool call per turn")


def test_a_call_in_the_text_or_the_reasoning_is_refused_by_name(monkeypatch, scripted):
    replies = scripted.handler.replies
    text_call = '{"tool": "click", "arguments": {"ref": 3}}'
    replies.put((200, {}, completion(content=f"I will click. {text_call}")))
    reasoning = completion(content="Done thinking.")
    reasoning["choices"][0]["message"]["reasoning_content"] = f"The call is {text_call}"
    replies.put((200, {}, reasoning))
    b = bridge(monkeypatch, url=scripted.url)  # tools sent as definitions: the call belongs in tool_calls
    first, second = act(b, obs()), act(b, obs(episode="ep-2"))
    assert (first["tool"], first["error_code"]) == (None, "tool_call_in_content")
    assert (second["tool"], second["error_code"]) == (None, "tool_call_in_reasoning")
    assert second["trace"]["reply"]["reasoning"].startswith("The call is")
    replies.put((200, {}, reasoning))
    replies.put((200, {}, completion(content=text_call)))
    text = bridge(monkeypatch, url=scripted.url, send_tool_definitions=False)  # tools in the prompt: text is read
    assert act(text, obs())["error_code"] == "tool_call_in_reasoning"
    assert act(text, obs(episode="ep-2"))["tool"] == "click"


def test_retries_honour_retry_after_then_succeed(monkeypatch, scripted):
    replies = scripted.handler.replies
    replies.put((429, {"Retry-After": "1"}, {"error": {"message": "slow down"}}))
    replies.put((503, {}, {"error": {"message": "busy"}}))
    replies.put((200, {}, completion(tool_calls=[call("wait", '{"ms": 5}')])))
    action = act(bridge(monkeypatch, url=scripted.url), obs())
    seen = scripted.handler.seen
    assert action["tool"] == "wait" and action["trace"]["attempts"] == 3 and action["trace"]["error"] is None
    assert seen[1]["t"] - seen[0]["t"] >= 0.95  # Retry-After: 1
    assert 0.08 <= seen[2]["t"] - seen[1]["t"] < 0.9  # no header: backoff 0.05 * 2
    trace = action["trace"]
    assert trace["backoffMs"] == pytest.approx(1100, abs=1) and trace["retryAfterMs"] == 1000
    assert trace["retryAfterCount"] == 1 and [f["status"] for f in trace["failures"]] == [429, 503]
    # The step's endpoint time splits into the answer that was used and the time lost to retries.
    assert trace["retryMs"] == pytest.approx(trace["backoffMs"] + trace["failedMs"], abs=0.01)
    assert 0 < trace["latencyMs"] < 900 and trace["failure"] is None


def test_after_the_last_retry_the_action_is_an_endpoint_error(monkeypatch, scripted):
    for _ in range(3):
        scripted.handler.replies.put((500, {}, {"error": {"message": f"boom {KEY}"}}))
    action = act(bridge(monkeypatch, url=scripted.url), obs())
    assert action["tool"] == "__endpoint_error__" and action["trace"]["attempts"] == 3
    assert action["arguments"]["message"].startswith("endpoint unavailable: HTTP 500")
    assert "***" in action["arguments"]["message"]  # the endpoint echoed the key: redacted
    scripted.handler.replies.put((401, {}, {"error": {"message": "bad key"}}))
    action = act(bridge(monkeypatch, url=scripted.url), obs())
    assert action["tool"] == "__endpoint_error__" and action["trace"]["attempts"] == 1  # 4xx: no retry
    assert action["failure"] == "endpoint_unavailable"
    for _ in range(3):
        scripted.handler.replies.put((429, {"Retry-After": "0.05"}, {"error": {"message": "quota"}}))
    action = act(bridge(monkeypatch, url=scripted.url), obs())
    assert (action["failure"], action["trace"]["failure"], action["trace"]["attempts"]) == ("rate_limited",) * 2 + (3,)
    assert action["arguments"]["message"].startswith("rate limited: HTTP 429")
    assert action["trace"]["retryAfterCount"] == 2 and action["trace"]["latencyMs"] == 0


def test_the_key_is_sent_but_never_returned(monkeypatch, scripted):
    echo = completion(content=f'{{"tool": "finish", "arguments": {{"reason": "key {KEY}"}}}}')
    scripted.handler.replies.put((200, {}, echo))
    scripted.handler.replies.put((200, {}, {"tool": "finish", "arguments": {"reason": KEY}}))
    text = bridge(monkeypatch, url=scripted.url, send_tool_definitions=False).predict(obs())
    assert scripted.handler.seen[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert KEY not in text and json.loads(text)["arguments"]["reason"] == "key ***"
    text = bridge(monkeypatch, url=scripted.url, use_openai_chat=False).predict(obs())
    assert scripted.handler.seen[1]["headers"]["authorization"] == f"Bearer {KEY}" and KEY not in text
    assert redact(f'"{KEY}" and "a\\"b"', 'a"b') == f'"{KEY}" and "***"'


def test_redaction_covers_the_forms_an_http_client_quotes_a_bad_key_in():
    key = "sk-secret-0123456789\n"
    header_error = f"Illegal header value {('Bearer ' + key).encode()!r}; in JSON {json.dumps(key)}; as text {key!r}"
    assert "secret-0123456789" in header_error
    text = redact(header_error, key)
    assert "secret-0123456789" not in text and text.count("***") == 3
    assert redact("stripped sk-secret-0123456789 here", key) == "stripped *** here"
    assert redact("a short key abc\n stays", "abc\n") == "a short key *** stays"


def test_without_a_key_no_authorization_header_is_sent(monkeypatch, scripted):
    scripted.handler.replies.put((200, {}, completion(content='{"tool": "finish"}')))
    action = act(bridge(monkeypatch, key=None, url=scripted.url), obs())
    assert "authorization" not in scripted.handler.seen[0]["headers"] and action["trace"]["request"]["headers"] == {}


def test_load_refuses_bad_config(monkeypatch):
    with pytest.raises(ValueError, match="endpoint.additional_params.model: 'model' is set by the bridge"):
        bridge(monkeypatch, url="http://127.0.0.1:1", additional_params={"model": "x"})
    with pytest.raises(ValueError, match="endpoint.url: scheme must be one of"):
        bridge(monkeypatch, url="ftp://127.0.0.1:1")


def test_the_history_is_a_bounded_lru(monkeypatch, reference):
    b = bridge(monkeypatch, url=reference, history_size=2)
    for episode in ("a", "b", "c"):
        act(b, obs(episode=episode))
    assert list(b._episodes) == ["b", "c"]


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds("3") == 3.0 and retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert 8 <= retry_after_seconds(formatdate(time.time() + 10, usegmt=True)) <= 10
    slept = []
    errors = iter([EndpointError("x", retryable=True, retry_after=2, status=429), EndpointError("y", retryable=True)])

    def send():
        err = next(errors, None)
        if err:
            raise err
        return Reply(status=200)

    cfg = EndpointConfig(url="http://x", max_retries=3, backoff_seconds=0.5, max_backoff_seconds=30)
    reply, stats = call_with_retries(send, cfg, sleep=slept.append)
    assert reply.status == 200 and stats["attempts"] == 3 and slept == [2, 1.0]
    assert (stats["retryAfterMs"], stats["retryAfterCount"], stats["backoffMs"]) == (2000, 1, 3000)
    # A Retry-After beyond the bridge's cap is honoured by stopping, never by calling back early.
    slept.clear()
    reply, stats = call_with_retries(lambda: (_ for _ in ()).throw(
        EndpointError("HTTP 429: slow", retryable=True, retry_after=99, status=429)), cfg, sleep=slept.append)
    assert reply is None and slept == [] and stats["attempts"] == 1 and stats["failure"] == "rate_limited"
    assert "Retry-After 99 s is longer than the bridge waits, 30 s" in stats["error"] and stats["latencyMs"] == 0


def test_a_reply_that_is_not_a_chat_completion_is_an_endpoint_error(monkeypatch, scripted):
    scripted.handler.replies.put((200, {}, {"unexpected": True}))
    scripted.handler.replies.put((200, {"Content-Type": "text/html"}, b"<html>hello</html>"))
    b = bridge(monkeypatch, url=scripted.url)
    first, second = act(b, obs()), act(b, obs(episode="ep-2"))
    assert first["tool"] == "__endpoint_error__" and first["trace"]["attempts"] == 1
    assert first["arguments"]["message"] == "endpoint unavailable: bad reply: no choices"
    assert second["arguments"]["message"] == "endpoint unavailable: bad reply: not a chat completion"
