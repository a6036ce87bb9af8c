"""The message contract (renderer, messages) and tool-call parsing: pure functions, no browser."""

from __future__ import annotations

import json

import pytest

from evaluations.agents.observation import (
    SHOWN_CHARS, first_user_message, mark_cut, raw_message, render_elements, tool_message,
)
from evaluations.agents.tools import (ENDPOINT_ERROR_TOOL, TOOL_NAMES, TOOL_SCHEMAS, ToolCall, ToolCallError,
                                      from_openai_tool_calls, from_reply_text, parse_action, tool_definitions,
                                      tools_prompt, validate_call)

ELEMENTS = [
    {"ref": 1, "parent": 0, "tag": "BODY", "text": "", "value": "", "id": "", "classes": "", "focused": False},
    {"ref": 2, "parent": 1, "tag": "DIV", "text": "", "value": "", "id": "wrap", "classes": "", "focused": False},
    {"ref": 3, "parent": 2, "tag": "LABEL", "text": "It's \\ here\nnow", "value": "", "id": "", "classes": "bold x",
     "focused": False},
    {"ref": 4, "parent": 2, "tag": "INPUT_text", "text": "", "value": "kanesha", "id": "username", "classes": "",
     "focused": True},
    {"ref": 5, "parent": 2, "tag": "INPUT_checkbox", "text": "", "value": True, "id": "ch0", "classes": "",
     "focused": False},
    {"ref": 6, "parent": 2, "tag": "INPUT_radio", "text": "", "value": False, "id": "", "classes": "",
     "focused": False},
    {"ref": -1, "parent": 2, "tag": "t", "text": "AU", "value": "", "id": "", "classes": "", "focused": False},
    {"ref": 7, "parent": 2, "tag": "BUTTON", "text": "Submit", "value": "", "id": "subbtn",
     "classes": "secondary-action", "focused": False},
    {"ref": 9, "parent": 8, "tag": "SPAN", "text": "orphan", "value": "", "id": "", "classes": "", "focused": False},
]


def test_it_renders_one_element_per_line_indented_by_depth():
    assert render_elements(ELEMENTS).splitlines() == [
        "[1] body",
        "  [2] div id=wrap",
        "    [3] label class='bold x' 'It\\'s \\\\ here\\nnow'",
        "    [4] input_text id=username value='kanesha' focused",
        "    [5] input_checkbox id=ch0 checked",
        "    [6] input_radio",
        "    [-1] t 'AU'",
        "    [7] button id=subbtn class='secondary-action' 'Submit'",
        "[9] span 'orphan'",
    ]


def test_it_accepts_the_string_form_of_checkbox_values():
    assert render_elements([{"ref": 5, "parent": 0, "tag": "INPUT_checkbox", "value": "True"}]) == \
        "[5] input_checkbox checked"
    assert render_elements([]) == ""


def test_a_cut_text_or_value_says_so_and_how_long_it_was():
    from miniwob.constants import TEXT_MAX_LENGTH

    assert SHOWN_CHARS == TEXT_MAX_LENGTH  # what miniwob's serializer keeps
    long_value, long_text = "v" * 300, "t" * 257
    element = mark_cut({"ref": 3, "parent": 0, "tag": "INPUT_text", "text": long_text[:256], "value": long_value[:256],
                        "focused": True}, text=long_text, value=long_value)
    assert (element["text_chars"], element["value_chars"]) == (257, 300)
    assert render_elements([element]) == (f"[3] input_text '{'t' * 256}' (text cut: 256 of 257 chars shown) "
                                          f"value='{'v' * 256}' (value cut: 256 of 300 chars shown) focused")
    short = mark_cut({"ref": 4, "tag": "INPUT_text", "value": "x" * 256}, text=None, value="x" * 256)
    assert "value_chars" not in short and render_elements([short]) == f"[4] input_text value='{'x' * 256}'"


def test_it_lays_out_the_messages():
    assert first_user_message("Click it.", "[1] body") == "GOAL: Click it.\nDOM:\n[1] body"
    assert tool_message("[1] body") == "DOM:\n[1] body"
    assert tool_message("[1] body", "ERROR: no element with ref 9") == "ERROR: no element with ref 9\nDOM:\n[1] body"
    assert tool_message("[1] body", "bad call") == "ERROR: bad call\nDOM:\n[1] body"
    assert raw_message('{"utterance": "x"}', "ERROR: e") == 'ERROR: e\n{"utterance": "x"}'


def test_the_tool_schemas_are_openai_function_tools():
    assert [t["function"]["name"] for t in tool_definitions()] == list(TOOL_NAMES)
    assert [t["function"]["name"] for t in tool_definitions(["finish", "click"])] == ["click", "finish"]
    click = TOOL_SCHEMAS["click"]
    assert click["type"] == "function"
    assert click["function"]["parameters"] == {"type": "object", "properties": {
        "ref": {"type": "integer", "description": "element ref"}}, "required": ["ref"], "additionalProperties": False}
    assert TOOL_SCHEMAS["finish"]["function"]["parameters"]["required"] == []
    assert "type_text(ref: integer, text: string)" in tools_prompt()
    assert '{"tool": "click", "arguments": {"ref": 4}}' in tools_prompt()


def test_it_reads_openai_tool_calls():
    calls = [{"id": "c1", "type": "function", "function": {"name": "type_text",
                                                           "arguments": '{"ref": 4, "text": "hi"}'}},
             {"id": "c2", "type": "function", "function": {"name": "click", "arguments": '{"ref": 7}'}}]
    assert from_openai_tool_calls(calls[:1]) == ToolCall("type_text", {"ref": 4, "text": "hi"})
    assert from_openai_tool_calls([{"function": {"name": "finish", "arguments": ""}}]) == ToolCall("finish", {})
    with pytest.raises(ToolCallError, match="2 tool calls in one reply \\(type_text, click\\); none was executed") as exc:
        from_openai_tool_calls(calls)
    assert exc.value.code == "multiple_tool_calls"


@pytest.mark.parametrize("reply, code", [
    ("I am not sure.", "no_tool_call"),
    ('{"tool": "click", "arguments": {ref: 5}}', "unparsed_tool_call"),
    ('{"tool": "click", "arguments": "{ref: 5}"}', "unparsed_tool_call"),
    ('{"tool": "click", "arguments": {"ref": 5}} and {"tool": "finish"}', "multiple_tool_calls"),
    ('{"tool": "fly", "arguments": {}}', "invalid_tool_call"),
])
def test_every_unusable_reply_text_has_a_named_code(reply, code):
    with pytest.raises(ToolCallError) as exc:
        from_reply_text(reply)
    assert exc.value.code == code


def test_it_reads_a_json_tool_call_from_reply_text():
    assert from_reply_text('{"tool": "click", "arguments": {"ref": 5}}') == ToolCall("click", {"ref": 5})
    text = 'I see the button {not json}.\n```json\n{"tool": "press_key", "arguments": {"key": "<Enter>"}}\n```'
    assert from_reply_text(text) == ToolCall("press_key", {"key": "<Enter>"})
    assert from_reply_text('{"name": "wait", "arguments": "{\\"ms\\": 300}"}') == ToolCall("wait", {"ms": 300})
    assert from_reply_text('{"a": 1} then {"tool": "finish", "arguments": {"reason": "done"}}') == \
        ToolCall("finish", {"reason": "done"})


def test_it_coerces_integer_like_arguments():
    assert validate_call("click", {"ref": "12"}).arguments == {"ref": 12}
    assert validate_call("wait", {"ms": 250.0}).arguments == {"ms": 250}


@pytest.mark.parametrize(("reply", "message"), [
    ("", "no tool call in the reply"),
    ("Sure! I clicked it.", "no tool call in the reply"),
    ('{"tool": "scroll", "arguments": {}}', "unknown tool 'scroll'"),
    ('{"tool": "click", "arguments": {}}', "click: missing argument 'ref'"),
    ('{"tool": "click", "arguments": {"ref": "five"}}', "click: argument 'ref' must be an integer"),
    ('{"tool": "click", "arguments": {"ref": true}}', "click: argument 'ref' must be an integer"),
    ('{"tool": "click", "arguments": {"ref": 1, "x": 2}}', "click: unexpected argument(s) x"),
    ('{"tool": "type_text", "arguments": {"ref": 1, "text": 5}}', "type_text: argument 'text' must be a string"),
    ('{"tool": "press_key", "arguments": {"key": ""}}', "press_key: 'key' must not be empty"),
    ('{"tool": "wait", "arguments": {"ms": -1}}', "wait: 'ms' must be >= 0"),
    ('{"tool": "click", "arguments": [1]}', "click: arguments must be a JSON object"),
    ('{"tool": "click", "arguments": "{ref: 1}"}', "click: arguments are not valid JSON"),
    ('{"tool": 3, "arguments": {}}', "no tool call: 'tool' must be a tool name"),
])
def test_every_bad_reply_is_a_tool_call_error(reply, message):
    with pytest.raises(ToolCallError) as exc:
        from_reply_text(reply)
    assert str(exc.value).startswith(message)


def test_bad_openai_tool_calls_are_errors():
    with pytest.raises(ToolCallError, match="no tool call in the reply"):
        from_openai_tool_calls([])
    with pytest.raises(ToolCallError, match="arguments are not valid JSON"):
        from_openai_tool_calls([{"function": {"name": "click", "arguments": "{"}}])
    with pytest.raises(ToolCallError, match="unknown tool 'type_text' \\(available: click, finish\\)"):
        from_openai_tool_calls([{"function": {"name": "type_text", "arguments": "{}"}}], allowed=("click", "finish"))


def test_the_env_action_parser_reports_every_kind_of_bad_action():
    action = '{"tool": "click", "arguments": {"ref": 3}, "trace": {"x": 1}}'
    assert parse_action(action) == ToolCall("click", {"ref": 3})
    assert parse_action(b'{"tool": "finish"}') == ToolCall("finish", {})
    endpoint = parse_action(json.dumps({"tool": ENDPOINT_ERROR_TOOL, "arguments": {"message": "down"}}), ("click",))
    assert endpoint == ToolCall(ENDPOINT_ERROR_TOOL, {"message": "down"})
    for action, message in [("not json", "action is not JSON"), ("[1, 2]", "action must be a JSON object"),
                            ('{"arguments": {}}', "no tool call in the action"),
                            ('{"tool": null, "error": "the reply had no call"}', "the reply had no call")]:
        with pytest.raises(ToolCallError, match=message):
            parse_action(action)
