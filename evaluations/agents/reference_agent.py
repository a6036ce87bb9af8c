"""A scripted reference agent, served as an OpenAI-compatible chat endpoint and as our HTTP agent protocol.

It reads only the messages (the contract of :mod:`.observation`): the ``GOAL:`` line of the first user message and
the element lines of the latest observation, never the env. Each turn it decides from the goal and the page as it
is now (what is typed, what is checked), so it needs no memory. It solves ``click-test``, ``click-button``,
``click-link``, ``focus-text``, ``enter-text``, ``enter-password``, ``login-user``, ``click-checkboxes`` and
``use-autocomplete``; on any other goal, or when it finds nothing to do, it calls ``finish``.

Routes (a threaded stdlib HTTP server, ``manage.py serve_reference_agent --port N`` or
``python -m evaluations.agents.reference_agent --port N``):

- ``POST /v1/chat/completions`` and ``POST /chat/completions``: a chat completion whose message holds
  ``tool_calls`` when the request sent ``tools``, else the call as JSON text in ``content``; ``usage`` counts
  tokens as characters / 4 of the prompt and reply. With ``use_wrapper: false`` (raw observation JSON as content)
  it renders the raw elements itself.
- ``POST /agent/step``: the HTTP agent protocol (:mod:`.bridge`): ``{"task", "goal", "observation", ...}`` →
  ``{"tool", "arguments", "usage"}``.

**Faults on request** (chat only), so tests can run a real endpoint that behaves like a busy provider: a chat body
(the run's ``endpoint.additional_params``) may carry ``reference_faults``, an object of

- ``usage_details`` (bool): also report ``prompt_tokens_details.cached_tokens`` (the tokens of every message but
  the last: a prefix cache) and ``completion_tokens_details.reasoning_tokens`` (half the completion tokens);
- ``omit_usage_steps`` (list of ints): turns (0 = the first call of a conversation, counted by the assistant
  messages already in it) whose reply has no ``usage`` at all;
- ``fail_steps`` (object turn → n): the first n attempts of that turn answer 429 (then it succeeds);
- ``fail_goal`` (string) with ``fail_from_step`` (int): conversations whose goal contains the string fail every
  attempt from that turn on, with ``statuses`` (list, default ``[429]``) in turn by attempt;
- ``retry_after`` (seconds, default 0.1): the ``Retry-After`` header sent with every 429.

Attempts are told apart by the request body (a retry resends the same bytes).

The same decisions as an ordinary ``rlmesh`` model (:class:`ReferencePolicy`), for ``/v1`` runs on the MiniWoB env
or behind the bridge's ``tcp://`` protocol:
``python -m rlmesh.serve evaluations.agents.reference_agent:ReferencePolicy --address 127.0.0.1:7600``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import rlmesh

from .observation import render_elements
from .reference_shop import decide_shop

__all__ = ["Element", "ReferencePolicy", "decide", "make_server", "parse_dom", "reply_for_chat"]

_LINE = re.compile(r"^(?P<indent> *)\[(?P<ref>-?\d+)\] (?P<tag>\S+)(?P<rest>.*)$")
_Q = r"'(?:\\.|[^'\\])*'"
_PART = re.compile(rf"\s+(?:id=(?P<id>\S+)|class=(?P<cls>{_Q})|value=(?P<value>{_Q})|(?P<text>{_Q})|"
                   r"(?P<flag>checked|focused))")


@dataclass
class Element:
    """One parsed contract line."""

    ref: int
    depth: int
    tag: str
    parent: int | None = None
    id: str = ""
    classes: str = ""
    text: str = ""
    value: str = ""
    checked: bool = False
    focused: bool = False


def _unquote(quoted: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), quoted[1:-1])


def parse_dom(dom: str) -> list[Element]:
    """The contract's element lines as :class:`Element` objects (other lines are skipped); ``parent`` from the
    indentation."""
    out: list[Element] = []
    stack: list[Element] = []
    for line in dom.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        el = Element(ref=int(match["ref"]), depth=len(match["indent"]) // 2, tag=match["tag"])
        for part in _PART.finditer(match["rest"]):
            if part["id"]:
                el.id = part["id"]
            elif part["cls"]:
                el.classes = _unquote(part["cls"])
            elif part["value"]:
                el.value = _unquote(part["value"])
            elif part["text"]:
                el.text = _unquote(part["text"])
            elif part["flag"]:
                setattr(el, part["flag"], True)
        while stack and stack[-1].depth >= el.depth:
            stack.pop()
        el.parent = stack[-1].ref if stack else None
        stack.append(el)
        out.append(el)
    return out


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def _first(elements: list[Element], pred: Callable[[Element], bool]) -> Element | None:
    return next((el for el in elements if pred(el)), None)


def _submit(elements: list[Element]) -> dict[str, Any]:
    button = _first(elements, lambda e: e.tag == "button")
    return _call("click", ref=button.ref) if button else _call("finish", reason="no submit button")


def _fill(el: Element, text: str) -> dict[str, Any] | None:
    """The next call that makes ``el``'s value ``text`` (None when it already is)."""
    if el.value == text:
        return None
    if el.value:  # wrong text typed: select it all, the next type_text replaces it
        return _call("press_key", key="C-a") if el.focused else _call("click", ref=el.ref)
    return _call("type_text", ref=el.ref, text=text)


def _fill_all(elements: list[Element], pairs: list[tuple[Element | None, str]]) -> dict[str, Any]:
    for el, text in pairs:
        if el is None:
            return _call("finish", reason="expected input not found")
        step = _fill(el, text)
        if step:
            return step
    return _submit(elements)


def _checkboxes(elements: list[Element], names: str) -> dict[str, Any]:
    wanted = set() if names.strip() == "nothing" else {n.strip() for n in names.split(",")}
    for box in (e for e in elements if e.tag == "input_checkbox"):
        label = _first(elements, lambda e: e.parent == box.parent and e.ref != box.ref and e.text)
        if label and (label.text in wanted) != box.checked:
            return _call("click", ref=box.ref)
    return _submit(elements)


def _autocomplete(elements: list[Element], prefix: str, suffix: str) -> dict[str, Any]:
    field = _first(elements, lambda e: e.tag == "input_text")
    if field is None:
        return _call("finish", reason="no text input")
    if field.value.startswith(prefix) and field.value.endswith(suffix) and len(field.value) > len(prefix):
        return _submit(elements)
    option = _first(elements, lambda e: e.tag in ("li", "div") and e.text.startswith(prefix)
                    and e.text.endswith(suffix) and e.ref != field.ref)
    if option:
        return _call("click", ref=option.ref)
    if not field.value:
        return _call("type_text", ref=field.ref, text=prefix)
    return _call("wait", ms=300)


def _by_id(elements: list[Element], ident: str) -> Element | None:
    return _first(elements, lambda e: e.id == ident)


#: (goal pattern, action builder) in order; the first matching pattern decides.
RULES: list[tuple[re.Pattern, Callable[[re.Match, list[Element]], dict[str, Any] | None]]] = [
    (re.compile(r"^Click the button\.?$"), lambda m, els: _submit(els)),
    (re.compile(r'Click on the "(.+)" button'),
     lambda m, els: _click_text(els, m[1], ("button",))),
    (re.compile(r'Click on the link "(.+)"'), lambda m, els: _click_text(els, m[1], ("span", "a"))),
    (re.compile(r"^Focus into the textbox"),
     lambda m, els: _click_first(els, lambda e: e.tag in ("input_text", "textarea"))),
    (re.compile(r'Enter the username "(.*)" and the password "(.*)" into the text fields'),
     lambda m, els: _fill_all(els, [(_by_id(els, "username"), m[1]), (_by_id(els, "password"), m[2])])),
    (re.compile(r'Enter the password "(.*)" into both text fields'),
     lambda m, els: _fill_all(els, [(e, m[1]) for e in els if e.tag == "input_password"])),
    (re.compile(r'^Enter "(.*)" into the text field and press Submit'),
     lambda m, els: _fill_all(els, [(_first(els, lambda e: e.tag == "input_text"), m[1])])),
    (re.compile(r"^Select (.*) and click Submit"), lambda m, els: _checkboxes(els, m[1])),
    (re.compile(r'Enter an item that starts with "(.*?)"(?: and ends with "(.*)")?'),
     lambda m, els: _autocomplete(els, m[1], m[2] or "")),
]


def _click_text(elements: list[Element], text: str, tags: tuple[str, ...]) -> dict[str, Any] | None:
    target = _first(elements, lambda e: e.tag in tags and e.text == text)
    return _call("click", ref=target.ref) if target else None


def _click_first(elements: list[Element], pred: Callable[[Element], bool]) -> dict[str, Any] | None:
    target = _first(elements, pred)
    return _call("click", ref=target.ref) if target else None


def decide(goal: str, dom: str) -> dict[str, Any]:
    """The next tool call ``{"tool", "arguments"}`` for this goal and page (``finish`` when no rule applies)."""
    elements = parse_dom(dom)
    shop = decide_shop(goal, elements)
    if shop is not None:
        return shop
    for pattern, build in RULES:
        match = pattern.search(goal)
        if match:
            return build(match, elements) or _call("finish", reason="nothing left that I know how to do")
    return _call("finish", reason="I do not know this task")


class ReferencePolicy(rlmesh.numpy.Model):
    """:func:`decide` as an rlmesh model: reads the MiniWoB observation's ``goal`` and ``dom``, returns the action
    text ``{"tool", "arguments"}``."""

    workflow_edition = "2026.06"

    def predict(self, observation: dict[str, Any]) -> str:
        goal, dom = (str(observation.get(k, "")) for k in ("goal", "dom"))
        return json.dumps(decide(goal, dom))


def _observation_text(content: Any) -> tuple[str | None, str]:
    """(goal or None, element lines) from one message content: the contract text, or raw observation JSON."""
    if isinstance(content, list):  # text + image parts
        content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    text = str(content or "")
    start = text.find("{")
    if start >= 0 and '"dom_elements"' in text:
        try:
            raw = json.loads(text[start:])
            return raw.get("utterance"), render_elements(raw.get("dom_elements", []))
        except json.JSONDecodeError:
            pass
    goal = re.search(r"^GOAL: (.*)$", text, re.M)
    _, _, dom = text.partition("DOM:\n")
    return (goal[1] if goal else None), dom


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def reply_for_chat(request: dict[str, Any]) -> dict[str, Any]:
    """A chat-completion response (OpenAI shape) for a chat request built by the bridge."""
    goal, dom = None, ""
    for message in request.get("messages", []):
        if message.get("role") in ("user", "tool"):
            g, d = _observation_text(message.get("content"))
            goal = goal or g
            if d.strip():
                dom = d
    call = decide(goal or "", dom)
    arguments = json.dumps(call["arguments"])
    if request.get("tools"):
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
            "function": {"name": call["tool"], "arguments": arguments}}]}
        finish_reason = "tool_calls"
    else:
        message = {"role": "assistant", "content": json.dumps(call)}
        finish_reason = "stop"
    prompt = _tokens(json.dumps(request.get("messages", [])))
    completion = _tokens(json.dumps(message))
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    faults = request.get("reference_faults") if isinstance(request.get("reference_faults"), dict) else {}
    if faults.get("usage_details"):
        cached = min(prompt, _tokens(json.dumps(request.get("messages", [])[:-1])))
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
        usage["completion_tokens_details"] = {"reasoning_tokens": completion // 2}
    out = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": int(time.time()),
           "model": request.get("model") or "reference-agent",
           "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}], "usage": usage}
    if _turn(request) in (faults.get("omit_usage_steps") or []):
        del out["usage"]
    return out


def _turn(request: dict[str, Any]) -> int:
    return sum(1 for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")


class _Faults:
    """Which attempt of which request body answers an error (``reference_faults``, module doc)."""

    def __init__(self):
        self.attempts: dict[str, int] = {}
        self.lock = threading.Lock()

    def error_for(self, request: dict[str, Any], raw: bytes) -> tuple[int, dict[str, str]] | None:
        faults = request.get("reference_faults")
        if not isinstance(faults, dict):
            return None
        key = hashlib.sha256(raw).hexdigest()
        with self.lock:
            attempt = self.attempts[key] = self.attempts.get(key, 0) + 1
        turn = _turn(request)
        first = next((m for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"), {})
        goal = json.dumps(first.get("content"))
        if faults.get("fail_goal") and faults["fail_goal"] in goal and turn >= int(faults.get("fail_from_step", 0)):
            statuses = faults.get("statuses") or [429]
            status = int(statuses[(attempt - 1) % len(statuses)])
        elif attempt <= int((faults.get("fail_steps") or {}).get(str(turn), 0)):
            status = 429
        else:
            return None
        return status, ({"Retry-After": str(faults.get("retry_after", 0.1))} if status == 429 else {})


def reply_for_step(request: dict[str, Any]) -> dict[str, Any]:
    """The HTTP agent protocol reply ``{"tool", "arguments", "usage"}`` for one step request."""
    goal, dom = _observation_text(request.get("observation"))
    call = decide(request.get("goal") or goal or "", dom)
    prompt, completion = _tokens(json.dumps(request)), _tokens(json.dumps(call))
    return {**call, "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the bridge reuses its connection
    # Headers and body go out in two writes; without TCP_NODELAY, Nagle + delayed ACK stall each reply ~40 ms.
    disable_nagle_algorithm = True
    routes = {"/v1/chat/completions": reply_for_chat, "/chat/completions": reply_for_chat,
              "/agent/step": reply_for_step}

    faults = _Faults()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        route = self.routes.get(self.path.rstrip("/"))
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return self._send(400, {"error": {"message": "the body is not JSON"}})
        if route is None:
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        fault = self.faults.error_for(body, raw) if isinstance(body, dict) else None
        if fault is not None:
            status, headers = fault
            return self._send(status, {"error": {"message": f"reference agent fault: HTTP {status}"}}, headers)
        return self._send(200, route(body))

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: one line per step is noise
        pass


def make_server(host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """The reference agent's threaded HTTP server, bound (``port`` 0: a free port; read ``server_address``)."""
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted; prints ``reference agent listening on http://HOST:PORT`` once bound."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    serve(args.host, args.port, lambda line: print(line, flush=True))


def serve(host: str, port: int, say: Callable[[str], Any]) -> None:
    server = make_server(host, port)
    say(f"reference agent listening on http://{server.server_address[0]}:{server.server_address[1]}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
