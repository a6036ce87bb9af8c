"""The endpoint bridge: an agent served at its owner's endpoint, wrapped as an ordinary ``rlmesh`` model server.

Started by the runtime like any model server; the API key is read from the process environment
(``RLMESH_ENDPOINT_KEY``), never from kwargs or argv, and is redacted from everything the bridge returns::

    RLMESH_ENDPOINT_KEY=sk-... python -m rlmesh.serve evaluations.agents.bridge:EndpointBridge \\
        --address 127.0.0.1:7500 --kwargs-json '{"url": "https://agent.example.com", "model": "gpt-4.1"}'

``load(**config)`` keys (:class:`~evaluations.agents.transport.EndpointConfig`): ``url``, ``model`` (sent as the
chat ``model``; ``"agent"`` when unset),
``use_wrapper`` (true: the contract messages of :mod:`.observation`; false: the raw observation JSON),
``send_tool_definitions`` (true: OpenAI ``tools``; false: tools described in the system message, the call read
from the reply text), ``use_openai_chat`` (true: chat completions; false: the HTTP agent protocol below),
``minimal_observation`` (false: add the screenshot as a PNG image; true/null: text only, the MiniWoB default),
``additional_params`` (merged into each chat request; may not set ``model``/``messages``/``tools``…),
``timeout_seconds`` (per call), ``max_retries``, ``backoff_seconds``, ``max_backoff_seconds``, ``history_size``.

Each ``predict(observation)`` reads ``meta`` (``episode``, ``step``, ``task``, ``tools``, and
``timeLeftSeconds``, the episode's time left, which the platform's episode loop adds) from the MiniWoB observation, extends that episode's conversation (an LRU of ``history_size`` episodes, restarted when ``step``
is 0; an observation without ``meta`` is a fresh conversation every step), calls the endpoint and returns the
action text: ``{"tool", "arguments", "trace"}``; ``{"tool": null,
"error": "<why>", "trace"}`` when the reply holds no usable tool call; ``{"tool": "__endpoint_error__",
"arguments": {"message"}, "trace"}`` after the last retry failed. ``trace``: ``protocol``, ``request``
(``method``, ``url``, ``headers`` with the key redacted, ``body`` as sent with screenshots replaced by
``<screenshot: image/png, N bytes>``), ``reply`` (``status``, ``content``, ``tool_calls``), ``latencyMs`` (the
endpoint call), ``usage`` (``prompt_tokens``, ``completion_tokens``, ``total_tokens`` as reported, or null),
``attempts``, ``backoffMs``, ``error``, ``overheadMs`` (the bridge's own time). With ``timeLeftSeconds`` the
endpoint call (every attempt and backoff) ends when that time is up, its connection closed, and the action is
``{"tool": null, "error_code": "deadline", "error", "trace"}`` (the episode loop executes nothing after its
deadline).

**HTTP agent protocol** (``use_openai_chat: false``): one ``POST {url}`` per step, ``Authorization: Bearer
<key>`` when a key is set::

    {"task": "miniwob.click-button", "episode": "6f1c…", "step": 1, "goal": "Click on the \\"Ok\\" button.",
     "observation": "DOM:\\n[1] body\\n  [2] div id=wrap\\n    [4] button 'Ok'",
     "history": [{"action": {"tool": "click", "arguments": {"ref": 9}}, "error": null}],
     "tools": [{"type": "function", "function": {"name": "click", ...}}, ...]}

``observation`` is the tool-message text (``ERROR: …`` first when the last action failed) or, with
``use_wrapper: false``, the raw observation JSON; ``history`` lists this episode's earlier replies in order
(``action`` null and ``error`` set when a reply held no usable call); ``screenshot`` (a PNG data URL) is added
when ``minimal_observation`` is false. The reply is ``{"tool": "click", "arguments": {"ref": 4}}``, optionally
with ``usage``; 429 and 5xx are retried as for chat. A ``tcp://host:port`` URL is an ``rlmesh`` model server:
the observation is forwarded unchanged and its action returned (with a ``trace``).
"""

from __future__ import annotations

import base64
import io
import json
import os
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import rlmesh

from ..outbound import excerpt
from .observation import SYSTEM_PROMPT, first_user_message, raw_message, text_of, tool_message
from .tools import ENDPOINT_ERROR_TOOL, TOOL_NAMES, ToolCallError, from_openai_tool_calls, from_reply_text, \
    looks_like_call, tool_definitions, tools_prompt, validate_call
from .transport import DEADLINE, EndpointConfig, EndpointError, HttpAgent, OpenAIChat, Reply, RlmeshModel, call_with_retries, \
    chat_url
from .validation import validate_endpoint

__all__ = ["ALLOW_PRIVATE_ENV", "KEY_ENV", "EndpointBridge", "redact", "validate_endpoint"]

#: Environment variable the platform sets on the bridge process with the endpoint's API key.
KEY_ENV = "RLMESH_ENDPOINT_KEY"
#: Environment variable the platform sets on the bridge process to ``true`` when the operator allows private and
#: loopback targets (``RLMESH_AGENT_ALLOW_PRIVATE_TARGETS``); anything else refuses them at every connection.
ALLOW_PRIVATE_ENV = "RLMESH_AGENT_ALLOW_PRIVATE_TARGETS"
IGNORED_CALL = "ERROR: only one tool call per turn; none of this turn's calls was executed"


def redact(text: str, key: str) -> str:
    """``text`` with every occurrence of ``key`` replaced by ``***``: raw, JSON-escaped, Python-repr'd (as str or
    bytes, as HTTP clients quote a bad header value), and, for keys of 8 characters or more, stripped of
    surrounding whitespace."""
    if not key:
        return text
    forms = {key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1], repr(key)[1:-1],
             repr(key.encode("utf-8", "backslashreplace"))[2:-1]}
    if len(key.strip()) >= 8:
        forms.add(key.strip())
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, "***")
    return text


def _png_data_url(image: np.ndarray) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _placeholder(url: str) -> str:
    return f"<screenshot: image/png, {len(url.partition(',')[2]) * 3 // 4} bytes>"


def _trace_body(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of a request body for the trace: image data URLs become size placeholders."""
    out = dict(body)
    if isinstance(out.get("screenshot"), str):
        out["screenshot"] = _placeholder(out["screenshot"])
    if "messages" in out:
        messages = []
        for message in out["messages"]:
            content = message.get("content")
            if isinstance(content, list):
                content = [{"type": "image_url", "image_url": {"url": _placeholder(p["image_url"]["url"])}}
                           if p.get("type") == "image_url" else p for p in content]
                message = {**message, "content": content}
            messages.append(message)
        out["messages"] = messages
    return out


@dataclass
class _Episode:
    """One episode's conversation: chat ``messages``, the ``pending`` tool-call ids of the last reply, the HTTP
    protocol's ``history``, and an rlmesh model session (``client``)."""

    messages: list[dict] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    client: Any = None


@dataclass
class _Obs:
    """The fields of one MiniWoB observation the bridge reads."""

    goal: str
    dom: str
    error: str
    raw: str
    episode: str
    step: int
    task: str
    tools: list[str]
    screenshot: np.ndarray | None
    original: dict[str, Any]
    #: When the episode's time runs out (``time.monotonic``), from ``meta.timeLeftSeconds``; None: no deadline.
    deadline: float | None = None

    def time_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    @classmethod
    def read(cls, observation: dict[str, Any]) -> _Obs:
        try:
            meta = json.loads(text_of(observation.get("meta")) or "{}")
        except json.JSONDecodeError:
            meta = {}
        meta = meta if isinstance(meta, dict) else {}
        shot = observation.get("screenshot")
        left = meta.get("timeLeftSeconds")
        deadline = time.monotonic() + float(left) if isinstance(left, (int, float)) and not isinstance(left, bool) \
            else None
        return cls(goal=text_of(observation.get("goal")), dom=text_of(observation.get("dom")),
                   error=text_of(observation.get("error")), raw=text_of(observation.get("raw")),
                   episode=str(meta.get("episode") or ""), step=int(meta.get("step") or 0),
                   task=str(meta.get("task") or ""), tools=list(meta.get("tools") or TOOL_NAMES),
                   screenshot=np.asarray(shot) if shot is not None else None, original=dict(observation),
                   deadline=deadline)


class EndpointBridge(rlmesh.numpy.Model):
    """Turns each observation into the endpoint's protocol and its reply into a tool-call action (module doc)."""

    workflow_edition = "2026.06"

    def load(  # type: ignore[override]
        self, url: str = "", model: str | None = None, use_wrapper: bool = True, send_tool_definitions: bool = True,
        use_openai_chat: bool = True, minimal_observation: bool | None = None, additional_params: dict | None = None,
        timeout_seconds: float = 60.0, max_retries: int = 3, backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 30.0, history_size: int = 256,
    ) -> None:
        self._episodes: OrderedDict[str, _Episode] = OrderedDict()
        self._history_size = max(1, int(history_size))
        self._lock = threading.Lock()
        self.cfg: EndpointConfig | None = None
        if not url:  # constructed bare (``EndpointBridge()``, describe): configured by a later load(url=...)
            return
        endpoint = {"url": url, "model": model or None, "use_wrapper": use_wrapper,
                    "send_tool_definitions": send_tool_definitions, "use_openai_chat": use_openai_chat,
                    "minimal_observation": minimal_observation, "additional_params": additional_params}
        # The submitting API checked the address; here only the shape: every connection is checked as it is made.
        errors = validate_endpoint(endpoint, allow_private=True)
        if errors:
            raise ValueError("; ".join(f"{e['path']}: {e['message']}" for e in errors))
        self.cfg = EndpointConfig(
            url=url, model=model or None, use_wrapper=bool(use_wrapper),
            send_tool_definitions=bool(send_tool_definitions), use_openai_chat=bool(use_openai_chat),
            minimal_observation=minimal_observation, additional_params=dict(additional_params or {}),
            timeout_seconds=float(timeout_seconds), max_retries=int(max_retries),
            backoff_seconds=float(backoff_seconds), max_backoff_seconds=float(max_backoff_seconds),
            key=os.environ.get(KEY_ENV, ""),
            allow_private=os.environ.get(ALLOW_PRIVATE_ENV, "").strip().lower() in ("1", "true", "yes", "on"))
        protocol = self.cfg.protocol
        transports = {"rlmesh": RlmeshModel, "openai-chat": OpenAIChat, "http-agent": HttpAgent}
        self._transport = transports[protocol](self.cfg)

    # -- per-episode state -------------------------------------------------------------------------------
    def _episode(self, obs: _Obs) -> _Episode:
        key = obs.episode or "default"
        with self._lock:
            episode = self._episodes.get(key)
            if episode is None or obs.step == 0:
                episode = self._episodes[key] = _Episode()
            self._episodes.move_to_end(key)
            while len(self._episodes) > self._history_size:
                _, old = self._episodes.popitem(last=False)
                _close_quietly(old.client)
        return episode

    def _image(self, obs: _Obs) -> str | None:
        minimal = True if self.cfg.minimal_observation is None else self.cfg.minimal_observation
        return None if minimal or obs.screenshot is None else _png_data_url(obs.screenshot)

    # -- predict -------------------------------------------------------------------------------------------
    def predict(self, observation: dict[str, Any]) -> str:
        if self.cfg is None:
            raise RuntimeError("EndpointBridge has no endpoint: load(url=...) first")
        t0 = time.perf_counter()
        obs = _Obs.read(observation)
        episode = self._episode(obs)
        if self.cfg.protocol == "rlmesh":
            action, trace = self._forward(episode, obs)
        elif self.cfg.protocol == "openai-chat":
            action, trace = self._chat(episode, obs)
        else:
            action, trace = self._http(episode, obs)
        trace["overheadMs"] = round((time.perf_counter() - t0) * 1000 - trace["latencyMs"] - trace["retryMs"], 3)
        action["trace"] = trace
        return redact(json.dumps(action, ensure_ascii=False, default=str), self.cfg.key)

    def _trace(self, request: dict[str, Any], reply: Reply | None, stats: dict[str, Any]) -> dict[str, Any]:
        return {
            "protocol": self.cfg.protocol, "request": request,
            "reply": None if reply is None else {"status": reply.status, "content": reply.content,
                                                 "tool_calls": reply.tool_calls, "reasoning": reply.reasoning},
            "latencyMs": round(stats["latencyMs"], 3), "usage": None if reply is None else reply.usage,
            "attempts": stats["attempts"], "backoffMs": round(stats["backoffMs"], 3),
            "retryMs": round(stats["retryMs"], 3), "failedMs": round(stats["failedMs"], 3),
            "retryAfterMs": round(stats["retryAfterMs"], 3), "retryAfterCount": stats["retryAfterCount"],
            "failures": stats["failures"], "failure": stats["failure"], "error": stats["error"],
        }

    def _headers(self) -> dict[str, str]:
        return {"Authorization": "Bearer ***"} if self.cfg.key else {}

    def _content(self, obs: _Obs, first: bool) -> str:
        if not self.cfg.use_wrapper:
            return raw_message(obs.raw, obs.error)
        return first_user_message(obs.goal, obs.dom) if first else tool_message(obs.dom, obs.error)

    def _chat(self, episode: _Episode, obs: _Obs) -> tuple[dict, dict]:
        image = self._image(obs)
        text = self._content(obs, first=not episode.messages)
        if not episode.messages:
            system = SYSTEM_PROMPT
            if not self.cfg.send_tool_definitions:
                system = f"{SYSTEM_PROMPT}\n\n{tools_prompt(obs.tools)}"
            episode.messages = [{"role": "system", "content": system}, _user(text, image)]
        elif episode.pending:
            episode.messages.append({"role": "tool", "tool_call_id": episode.pending[0], "content": text})
            episode.messages += [{"role": "tool", "tool_call_id": i, "content": IGNORED_CALL}
                                 for i in episode.pending[1:]]
            if image:
                episode.messages.append(_user("Screenshot of the page after the action:", image))
        else:
            episode.messages.append(_user(text, image))
        episode.pending = []
        body: dict[str, Any] = {**(self.cfg.additional_params or {}), "model": self.cfg.model or "agent",
                                "messages": _latest_image_only(episode.messages)}
        if self.cfg.send_tool_definitions:
            body["tools"] = tool_definitions(obs.tools)
        reply, stats = call_with_retries(lambda: self._transport.send(body, obs.time_left()), self.cfg,
                                         deadline=obs.deadline)
        request = {"method": "POST", "url": chat_url(self.cfg.url), "headers": self._headers(),
                   "body": _trace_body(body)}
        trace = self._trace(request, reply, stats)
        if reply is None:
            return _endpoint_error(stats), trace
        calls = [{**tc, "id": tc.get("id") or f"call_{uuid.uuid4().hex[:12]}"} for tc in reply.tool_calls]
        assistant: dict[str, Any] = {"role": "assistant", "content": reply.content or ("" if not calls else None)}
        if calls:
            assistant["tool_calls"] = [{"id": c["id"], "type": "function", "function": c.get("function", {})}
                                       for c in calls]
            episode.pending = [c["id"] for c in calls]
        episode.messages.append(assistant)
        try:
            call = self._read_call(calls, reply, obs.tools)
        except ToolCallError as exc:
            return {"tool": None, "error": str(exc), "error_code": exc.code}, trace
        return call.as_action(), trace

    def _read_call(self, calls: list[dict], reply: Reply, tools: list[str]):
        """The one tool call of a chat reply; raises :class:`ToolCallError` with a named code (tools module doc).
        With tool definitions sent the call belongs in ``tool_calls``: one written in the text or the reasoning is
        refused by name, never guessed at; without them it is read from the text."""
        if calls:
            return from_openai_tool_calls(calls, tools)
        if self.cfg.send_tool_definitions:
            if looks_like_call(reply.content):
                raise ToolCallError("the tool call is in the reply text; send it in tool_calls (the tools were "
                                    "given as definitions)", "tool_call_in_content")
        else:
            try:
                return from_reply_text(reply.content, tools)
            except ToolCallError as exc:
                if exc.code != "no_tool_call" or not looks_like_call(reply.reasoning):
                    raise
        if looks_like_call(reply.reasoning):
            raise ToolCallError("the tool call is in the reasoning, not in the answer; the reasoning is never "
                                "executed", "tool_call_in_reasoning")
        raise ToolCallError("no tool call in the reply", "no_tool_call")

    def _http(self, episode: _Episode, obs: _Obs) -> tuple[dict, dict]:
        body: dict[str, Any] = {"task": obs.task, "episode": obs.episode, "step": obs.step, "goal": obs.goal,
                                "observation": self._content(obs, first=False), "history": list(episode.history),
                                "tools": tool_definitions(obs.tools)}
        image = self._image(obs)
        if image:
            body["screenshot"] = image
        reply, stats = call_with_retries(lambda: self._transport.send(body, obs.time_left()), self.cfg,
                                         deadline=obs.deadline)
        trace = self._trace({"method": "POST", "url": self.cfg.url, "headers": self._headers(),
                             "body": _trace_body(body)}, reply, stats)
        if reply is None:
            return _endpoint_error(stats), trace
        data = reply.action if isinstance(reply.action, dict) else {}
        try:
            if data.get("tool") is None:
                raise ToolCallError(str(data.get("error") or "no tool call in the reply (expected {\"tool\", "
                                                            "\"arguments\"})"),
                                    "no_tool_call" if isinstance(reply.action, dict) else "unparsed_tool_call")
            action = validate_call(data["tool"], data.get("arguments"), obs.tools).as_action()
            episode.history.append({"action": action, "error": None})
        except ToolCallError as exc:
            episode.history.append({"action": None, "error": str(exc)})
            return {"tool": None, "error": str(exc), "error_code": exc.code}, trace
        return action, trace

    def _forward(self, episode: _Episode, obs: _Obs) -> tuple[dict, dict]:
        transport: RlmeshModel = self._transport  # type: ignore[assignment]

        def send() -> Reply:
            if episode.client is None:
                episode.client = transport.open(obs.original)
            try:
                return transport.send(episode.client, obs.original)
            except EndpointError:
                _close_quietly(episode.client)
                episode.client = None
                raise

        reply, stats = call_with_retries(send, self.cfg, deadline=obs.deadline)
        body = {k: (f"<array {v.shape} {v.dtype}>" if isinstance(v, np.ndarray) else v)
                for k, v in obs.original.items()}
        trace = self._trace({"method": "predict", "url": self.cfg.url, "headers": {}, "body": body}, reply, stats)
        if reply is None:
            return _endpoint_error(stats), trace
        try:
            action = json.loads(reply.action) if isinstance(reply.action, str) else reply.action
        except json.JSONDecodeError:
            action = None
        if not isinstance(action, dict):
            why = f"the model's action is not a JSON object; {excerpt(str(reply.action), label='it starts')}"
            return {"tool": None, "error": why, "error_code": "unparsed_tool_call"}, trace
        action.pop("trace", None)
        return action, trace


def _user(text: str, image: str | None) -> dict[str, Any]:
    if not image:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [{"type": "text", "text": text},
                                        {"type": "image_url", "image_url": {"url": image}}]}


def _latest_image_only(messages: list[dict]) -> list[dict]:
    """The messages with every image part but the last one replaced by a short text (keeps requests small)."""
    last = max((i for i, m in enumerate(messages) if isinstance(m.get("content"), list)), default=-1)
    out = []
    for i, message in enumerate(messages):
        if isinstance(message.get("content"), list) and i != last:
            parts = [{"type": "text", "text": "(earlier screenshot omitted)"} if p.get("type") == "image_url" else p
                     for p in message["content"]]
            message = {**message, "content": parts}
        out.append(message)
    return out


def _endpoint_error(stats: dict[str, Any]) -> dict[str, Any]:
    """The action after the last retry failed: ``failure`` (``rate_limited`` / ``endpoint_unavailable``) names it,
    the message starts with it in words; a call the episode's deadline stopped is no action at all
    (``error_code: deadline``)."""
    if stats.get("failure") == DEADLINE:
        return {"tool": None, "error": stats.get("error") or "the episode's time ran out", "error_code": DEADLINE}
    failure = stats.get("failure") or "endpoint_unavailable"
    words = "rate limited" if failure == "rate_limited" else "endpoint unavailable"
    return {"tool": ENDPOINT_ERROR_TOOL, "failure": failure,
            "arguments": {"message": f"{words}: {stats.get('error') or 'no reply'}"}}


def _close_quietly(client: Any) -> None:
    if client is not None:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - a dead model session is dropped either way
            pass
