"""The five tools an agent acts with, and how a tool call is read from an action or an endpoint's reply.

Tools (OpenAI function-tool schemas in :data:`TOOL_SCHEMAS`; every argument is required except ``reason``):

======================  =========================================  ==========================================
tool                    arguments                                  effect on the page
======================  =========================================  ==========================================
``click``               ``ref: integer``                           click the element (a text node: its parent)
``type_text``           ``ref: integer, text: string``             focus the element, then type the text
``press_key``           ``key: string``                            press a key: ``a``, ``<Enter>``,
                                                                   ``<Backspace>``, ``<Tab>``, ``<Down>``, ``C-a`` …
``wait``                ``ms: integer``                            sleep (capped at :data:`WAIT_MAX_MS`), then observe
``finish``              ``reason: string`` (optional)              end the episode (the agent's terminal action)
======================  =========================================  ==========================================

An **action** (the env's ``Text`` action) is a JSON object ``{"tool": "<name>", "arguments": {...}}``; other keys
(``"trace"``, ``"error"``) are ignored by the env. ``{"tool": null, "error": "<why>"}`` means the agent gave no usable
tool call; the env answers it with an ``ERROR:`` observation. ``{"tool": "__endpoint_error__", "arguments":
{"message": "..."}}`` (:data:`ENDPOINT_ERROR_TOOL`) is sent by the bridge when the endpoint stays down.

A tool call is read from an endpoint reply in one of two forms:

(a) OpenAI ``tool_calls`` (``send_tool_definitions: true``): ``[{"id": ..., "type": "function", "function":
    {"name": "click", "arguments": "{\\"ref\\": 5}"}}]``; only the first call is executed.
(b) free reply text (``send_tool_definitions: false``, tools described by :func:`tools_prompt`): the first JSON
    object in the text with a ``"tool"`` key, e.g. ``I will click it. {"tool": "click", "arguments": {"ref": 5}}``
    (code fences around it are fine).

Every failure raises :class:`ToolCallError` whose message is what the agent is shown after ``ERROR:`` and whose
``code`` names the kind (:data:`TOOL_CALL_ERRORS`): ``no_tool_call``, ``unparsed_tool_call`` (arguments or a call
object that are not JSON), ``multiple_tool_calls`` (several calls where one is expected), ``tool_call_in_content``
and ``tool_call_in_reasoning`` (a call written in the reply text or the reasoning while the tools were sent as
definitions, so it belonged in ``tool_calls``; the bridge decides these), ``invalid_tool_call`` (an unknown tool,
missing or mistyped arguments).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ENDPOINT_ERROR_TOOL", "TOOL_CALL_ERRORS", "calls_in_text", "looks_like_call", "TOOL_NAMES", "TOOL_SCHEMAS", "WAIT_MAX_MS", "ToolCall", "ToolCallError",
    "from_openai_tool_calls", "from_reply_text", "parse_action", "tool_definitions", "tools_prompt", "validate_call",
]

TOOL_NAMES: tuple[str, ...] = ("click", "type_text", "press_key", "wait", "finish")
ENDPOINT_ERROR_TOOL = "__endpoint_error__"
#: Longest sleep one ``wait`` call gets (ms); longer requests are cut to this.
WAIT_MAX_MS = 5000
#: Longest text one ``type_text`` call may type (characters).
MAX_TEXT_CHARS = 2000

_INT = {"type": "integer"}
_STR = {"type": "string"}


def _schema(name: str, description: str, properties: dict[str, dict], required: tuple[str, ...]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(required),
                           "additionalProperties": False},
        },
    }


#: Tool name → OpenAI function-tool schema (``{"type": "function", "function": {name, description, parameters}}``).
TOOL_SCHEMAS: dict[str, dict] = {
    "click": _schema("click", "Click the element with this ref (the number in brackets in the DOM listing).",
                     {"ref": {**_INT, "description": "element ref"}}, ("ref",)),
    "type_text": _schema("type_text",
                         "Focus the element with this ref, then type the text (appended to what is there).",
                         {"ref": {**_INT, "description": "element ref"}, "text": {**_STR, "description": "text"}},
                         ("ref", "text")),
    "press_key": _schema("press_key", "Press one key or key combination, e.g. 'a', '<Enter>', '<Backspace>', "
                         "'<Tab>', '<Down>', 'C-a' (Ctrl+A).", {"key": {**_STR, "description": "key"}}, ("key",)),
    "wait": _schema("wait", f"Wait this many milliseconds (at most {WAIT_MAX_MS}), then look at the page again.",
                    {"ms": {**_INT, "description": "milliseconds"}}, ("ms",)),
    "finish": _schema("finish", "Stop: the task is done (or cannot be done).",
                      {"reason": {**_STR, "description": "why you stop"}}, ()),
}

#: Argument name → (python type, required) per tool.
_ARGUMENTS: dict[str, dict[str, tuple[type, bool]]] = {
    "click": {"ref": (int, True)},
    "type_text": {"ref": (int, True), "text": (str, True)},
    "press_key": {"key": (str, True)},
    "wait": {"ms": (int, True)},
    "finish": {"reason": (str, False)},
    ENDPOINT_ERROR_TOOL: {"message": (str, False)},
}


#: The named kinds of unusable replies (``ToolCallError.code``, the transcript's ``error`` events, rollout counts).
TOOL_CALL_ERRORS: tuple[str, ...] = ("no_tool_call", "unparsed_tool_call", "multiple_tool_calls",
                                     "tool_call_in_content", "tool_call_in_reasoning", "invalid_tool_call")


class ToolCallError(ValueError):
    """A missing or unusable tool call; ``str(exc)`` is the message the agent sees after ``ERROR:``, ``code`` one of
    :data:`TOOL_CALL_ERRORS` (default ``invalid_tool_call``)."""

    def __init__(self, message: str, code: str = "invalid_tool_call"):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ToolCall:
    """One validated tool call: ``tool`` is a name of :data:`TOOL_NAMES` (or :data:`ENDPOINT_ERROR_TOOL`),
    ``arguments`` holds exactly that tool's arguments with their python types (``ref``/``ms`` int)."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def as_action(self) -> dict[str, Any]:
        """The action JSON object ``{"tool": ..., "arguments": {...}}``."""
        return {"tool": self.tool, "arguments": dict(self.arguments)}


def tool_definitions(names: tuple[str, ...] | list[str] = TOOL_NAMES) -> list[dict]:
    """The OpenAI ``tools`` list for these tool names (unknown names are skipped), in :data:`TOOL_NAMES` order."""
    return [TOOL_SCHEMAS[name] for name in TOOL_NAMES if name in names]


def tools_prompt(names: tuple[str, ...] | list[str] = TOOL_NAMES) -> str:
    """Plain-text tool descriptions for a system message (``send_tool_definitions: false``), ending with the
    reply format the parser (:func:`from_reply_text`) reads."""
    lines = ["Tools:"]
    for schema in tool_definitions(names):
        fn = schema["function"]
        args = ", ".join(f"{arg}: {spec['type']}" for arg, spec in fn["parameters"]["properties"].items())
        lines.append(f"- {fn['name']}({args}): {fn['description']}")
    lines.append('Answer with exactly one tool call as a JSON object, e.g. {"tool": "click", "arguments": {"ref": 4}}.')
    return "\n".join(lines)


def _coerce(tool: str, name: str, value: Any, kind: type) -> Any:
    if kind is int:
        if isinstance(value, bool):
            raise ToolCallError(f"{tool}: argument '{name}' must be an integer, got {json.dumps(value)}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
            return int(value)
        raise ToolCallError(f"{tool}: argument '{name}' must be an integer, got {json.dumps(value)[:60]}")
    if not isinstance(value, str):
        raise ToolCallError(f"{tool}: argument '{name}' must be a string, got {json.dumps(value)[:60]}")
    return value


def validate_call(tool: Any, arguments: Any, allowed: tuple[str, ...] | list[str] = TOOL_NAMES) -> ToolCall:
    """Check one tool call against the schemas and return it with typed arguments.

    ``arguments`` may be a dict, ``None`` (no arguments) or a JSON string (as OpenAI sends them). Raises
    :class:`ToolCallError` for an unknown tool (or one outside ``allowed``), arguments that are not an object,
    missing, unexpected or mistyped arguments, an empty key, a negative wait or an over-long text.
    """
    if not isinstance(tool, str) or not tool:
        raise ToolCallError("no tool call: 'tool' must be a tool name")
    if tool not in allowed and tool != ENDPOINT_ERROR_TOOL:
        raise ToolCallError(f"unknown tool {tool!r} (available: {', '.join(allowed)})")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolCallError(f"{tool}: arguments are not valid JSON ({exc.msg})", "unparsed_tool_call") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolCallError(f"{tool}: arguments must be a JSON object")
    spec = _ARGUMENTS[tool]
    unexpected = sorted(set(arguments) - set(spec))
    if unexpected:
        raise ToolCallError(f"{tool}: unexpected argument(s) {', '.join(unexpected)}")
    out: dict[str, Any] = {}
    for name, (kind, required) in spec.items():
        if name not in arguments or arguments[name] is None:
            if required:
                raise ToolCallError(f"{tool}: missing argument '{name}'")
            continue
        out[name] = _coerce(tool, name, arguments[name], kind)
    if tool == "press_key" and not out["key"]:
        raise ToolCallError("press_key: 'key' must not be empty")
    if tool == "wait" and out["ms"] < 0:
        raise ToolCallError("wait: 'ms' must be >= 0")
    if tool == "type_text" and len(out["text"]) > MAX_TEXT_CHARS:
        raise ToolCallError(f"type_text: text longer than {MAX_TEXT_CHARS} characters")
    return ToolCall(tool, out)


def parse_action(text: str | bytes, allowed: tuple[str, ...] | list[str] = TOOL_NAMES) -> ToolCall:
    """Read the env's action: a JSON object ``{"tool", "arguments"}`` (extra keys ignored).

    Raises :class:`ToolCallError` when the text is not a JSON object, has no tool (``{"tool": null, "error":
    "<why>"}`` raises with ``<why>``), or the call fails :func:`validate_call`.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    try:
        action = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        raise ToolCallError(f"action is not JSON: {str(text)[:80]!r}") from None
    if not isinstance(action, dict):
        raise ToolCallError("action must be a JSON object with 'tool' and 'arguments'")
    if action.get("tool") is None:
        raise ToolCallError(str(action.get("error") or "no tool call in the action"),
                            str(action.get("error_code") or "no_tool_call"))
    return validate_call(action["tool"], action.get("arguments"), allowed)


def from_openai_tool_calls(tool_calls: list[dict], allowed: tuple[str, ...] | list[str] = TOOL_NAMES) -> ToolCall:
    """The first of OpenAI ``tool_calls`` (dicts ``{"id", "type", "function": {"name", "arguments"}}``) as a
    :class:`ToolCall`. Raises :class:`ToolCallError` when the list is empty (``no_tool_call``), holds several calls
    (``multiple_tool_calls``: none is executed) or the call is invalid."""
    if not tool_calls:
        raise ToolCallError("no tool call in the reply", "no_tool_call")
    if len(tool_calls) > 1:
        names = ", ".join(str(((c or {}).get("function") or {}).get("name")) for c in tool_calls[:5])
        raise ToolCallError(f"{len(tool_calls)} tool calls in one reply ({names}); none was executed: send exactly "
                            "one per turn", "multiple_tool_calls")
    function = (tool_calls[0] or {}).get("function") or {}
    return validate_call(function.get("name"), function.get("arguments"), allowed)


def json_objects(text: str):
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


#: The start of a call object in text: ``{"tool": …`` or ``{"name": …`` (used to tell unparsable calls from prose).
_CALL_START = re.compile(r'\{\s*"(?:tool|name)"\s*:')


def calls_in_text(text: str | None) -> list[dict]:
    """The JSON objects in ``text`` that look like tool calls (a ``"tool"`` key, or ``"name"`` with
    ``"arguments"``), in order."""
    return [obj for obj in json_objects(text or "")
            if "tool" in obj or (isinstance(obj.get("name"), str) and "arguments" in obj)]


def looks_like_call(text: str | None) -> bool:
    """Whether ``text`` holds a tool call, readable or not (a call object, or the start of one)."""
    return bool(calls_in_text(text)) or bool(_CALL_START.search(text or ""))


def from_reply_text(text: str | None, allowed: tuple[str, ...] | list[str] = TOOL_NAMES) -> ToolCall:
    """The one JSON object with a ``"tool"`` key in free reply text, as a :class:`ToolCall`.

    Also accepts ``{"name": ..., "arguments": ...}`` (the OpenAI function shape). Raises :class:`ToolCallError`
    when the text holds no such object (``no_tool_call``; ``unparsed_tool_call`` when it starts one that is not
    JSON), several (``multiple_tool_calls``), or the call is invalid.
    """
    calls = calls_in_text(text)
    if len(calls) > 1:
        raise ToolCallError(f"{len(calls)} tool calls in one reply; none was executed: send exactly one per turn",
                            "multiple_tool_calls")
    if calls:
        obj = calls[0]
        if "tool" in obj:
            return validate_call(obj["tool"], obj.get("arguments"), allowed)
        return validate_call(obj["name"], obj["arguments"], allowed)
    if _CALL_START.search(text or ""):
        raise ToolCallError('the tool call in the reply is not valid JSON (expected {"tool": ..., "arguments": '
                            '{...}})', "unparsed_tool_call")
    raise ToolCallError('no tool call in the reply (expected a JSON object {"tool": ..., "arguments": {...}})',
                        "no_tool_call")
