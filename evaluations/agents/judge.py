"""The judge of an open run: an OpenAI-compatible chat endpoint asked once, at the end of a rollout, whether the
agent accomplished the task. Reached through the bridge's own transport (:class:`.transport.OpenAIChat`, with its
retries), so the same URL rules, timeouts and redaction apply.

The request: ``model`` (the judge's, default ``judge``), the judge's ``additional_params``, a ``system`` message
(:data:`JUDGE_PROMPT`), one ``user`` message holding JSON ``{"task", "final_state", "transcript", "final_page"}``
(the task definition; the shop's state summary after the last step; each step's tool call, result and error;
the last page as the agent saw it, cut to :data:`MAX_PAGE_CHARS`), and one tool ``verdict(passed: boolean,
reason: string)``. The reply is read from that tool call, else from the first JSON object with ``"passed"`` in
the reply text. The result is one verifier ``{"name": "judge", "kind": "judge", "passed", "score", "detail"}``:
``passed`` null (and ``detail`` saying why) when the judge could not be reached or answered nothing readable.
Nothing here imports Django.
"""

from __future__ import annotations

import json
from typing import Any

from .tools import json_objects
from .transport import EndpointConfig, OpenAIChat, call_with_retries, chat_url

__all__ = ["JUDGE_PROMPT", "VERDICT_TOOL", "judge_rollout"]

MAX_PAGE_CHARS = 8000
MAX_STEPS_SHOWN = 200
JUDGE_PROMPT = (
    "You judge whether an agent accomplished a TASK in a web shop. You get the task, the shop's FINAL STATE after "
    "the agent's last step (cart, wish list, orders with 'placed': 'episode' for those placed during this run, "
    "account settings, the final page and form values, the pages visited), the agent's steps and the final page. "
    "Judge by the final state, not by what the agent claims. Call the verdict tool once (or answer with a JSON "
    'object {"passed": true|false, "reason": "..."}); the reason names what you saw.'
)
VERDICT_TOOL = {"type": "function", "function": {
    "name": "verdict", "description": "Your verdict on the rollout.",
    "parameters": {"type": "object", "properties": {
        "passed": {"type": "boolean", "description": "true when the task was accomplished"},
        "reason": {"type": "string", "description": "what in the final state decided it"}},
        "required": ["passed", "reason"], "additionalProperties": False}}}


def _steps(events: list[dict]) -> list[dict]:
    steps = [{"step": e["step"], "tool": e.get("tool"), "arguments": e.get("arguments"), "result": e.get("result"),
              "error": e.get("error")} for e in events if e.get("type") == "tool"]
    return steps[-MAX_STEPS_SHOWN:]


def _final_page(events: list[dict]) -> str:
    text = next((e.get("text") or "" for e in reversed(events) if e.get("type") == "observation"), "")
    return text[-MAX_PAGE_CHARS:]


def _read_verdict(content: str | None, tool_calls: list[dict]) -> tuple[bool | None, str]:
    for call in tool_calls:
        function = call.get("function") or {}
        if function.get("name") == "verdict":
            try:
                args = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                continue
            if isinstance(args, dict) and isinstance(args.get("passed"), bool):
                return args["passed"], str(args.get("reason") or "")
    for obj in json_objects(content or ""):
        if isinstance(obj.get("passed"), bool):
            return obj["passed"], str(obj.get("reason") or "")
    return None, "the judge's reply held no verdict"


def judge_rollout(cfg: EndpointConfig, *, task: str, state: dict | None, events: list[dict]) -> tuple[dict, dict]:
    """Ask the judge at ``cfg`` about one rollout; returns ``(verifier, trace)`` where ``trace`` is what the
    transcript records (``request`` without the key, ``reply``, ``latencyMs``, ``usage``, ``attempts``, ``error``)."""
    payload = {"task": task, "final_state": state or {}, "transcript": _steps(events), "final_page": _final_page(events)}
    body: dict[str, Any] = {**(cfg.additional_params or {}), "model": cfg.model or "judge",
                            "messages": [{"role": "system", "content": JUDGE_PROMPT},
                                         {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}],
                            "tools": [VERDICT_TOOL]}
    chat = OpenAIChat(cfg)  # one client (one connection pool) for every attempt, closed after the last
    try:
        reply, stats = call_with_retries(lambda: chat.send(body), cfg)
    finally:
        chat.close()
    trace = {"request": {"method": "POST", "url": chat_url(cfg.url),
                         "headers": {"Authorization": "Bearer ***"} if cfg.key else {}, "body": body},
             "reply": None if reply is None else {"content": reply.content, "tool_calls": reply.tool_calls},
             "latencyMs": round(stats["latencyMs"], 3), "usage": None if reply is None else reply.usage,
             "attempts": stats["attempts"], "error": stats["error"]}
    if reply is None:
        passed, reason = None, f"the judge could not be reached: {stats['error']}"
    else:
        passed, reason = _read_verdict(reply.content, reply.tool_calls)
    verifier = {"name": "judge", "kind": "judge", "passed": passed,
                "score": None if passed is None else float(passed), "detail": reason[:2000] or "(no reason given)"}
    return verifier, trace
