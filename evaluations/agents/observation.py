"""The message contract: how a web page is shown to an agent as text, and how the conversation is laid out.

**Elements** (the env's ``dom`` observation): one element per line, in document order, indented two spaces per
depth (children under their parent)::

    [ref] tag id=<id> class='<classes>' '<text>' value='<value>' checked focused

- ``ref``: the integer to pass to ``click`` / ``type_text``. Text pieces that share a parent with other elements
  are pseudo-elements with tag ``t`` and a negative ref (clicking one clicks its parent).
- ``tag``: the lower-cased tag name; inputs carry their type (``input_text``, ``input_password``,
  ``input_checkbox``, ``input_radio``, ``textarea``).
- Each further part is omitted when empty: ``id=`` the HTML id (unquoted), ``class=`` the class attribute,
  the element's own text, ``value=`` the value of a text input or textarea, ``checked`` for a checked checkbox
  or radio (their ``value=`` is never shown), ``focused`` for the element that has the keyboard focus.
- Quoted strings use single quotes; ``\\``, ``'`` and line breaks inside them are escaped as ``\\\\``, ``\\'``, ``\\n``.
- The text and the value show at most 256 characters (miniwob's cut). A longer one is followed by
  ``(text cut: 256 of <n> chars shown)`` / ``(value cut: 256 of <n> chars shown)``, ``n`` its full length, so
  the agent knows the quoted part is only the start (``text_chars`` / ``value_chars`` in the raw JSON).

Example (login-user)::

    [2] div id=wrap
      [3] div id=query 'Enter the username "kanesha" and the password "x1" into the text fields and press login.'
      [4] div id=area
        [5] label 'Username'
        [6] input_text id=username value='kanesha' focused
        [7] label 'Password'
        [8] input_password id=password
        [9] button class='secondary-action' 'Login'

**Conversation** (``use_wrapper: true``):

1. ``system``: :data:`SYSTEM_PROMPT` (plus the tool descriptions when tools are not sent as definitions).
2. ``user``: ``GOAL: <goal>\\nDOM:\\n<elements>`` (:func:`first_user_message`).
3. ``assistant``: the agent's reply (one tool call).
4. ``tool`` (answering that call's ``tool_call_id``; a ``user`` message when the reply had no call id):
   ``DOM:\\n<elements>``, prefixed ``ERROR: <message>\\n`` when the action failed (:func:`tool_message`).
5. 3–4 repeat until the episode ends.

With ``use_wrapper: false`` the user/tool contents are the raw observation JSON (the env's ``raw`` key) instead,
prefixed the same way on errors. A screenshot (``minimal_observation: false``) is sent as an extra ``image_url``
part ``data:image/png;base64,…`` of the user message that carries the current page.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["SHOWN_CHARS", "SYSTEM_PROMPT", "first_user_message", "mark_cut", "raw_message", "render_element",
           "render_elements", "tool_message"]

SYSTEM_PROMPT = (
    "You operate a web page to achieve the GOAL. Each turn you see the page as a list of elements, one per line: "
    "[ref] tag id=... class='...' 'text' value='...' checked focused. Act with exactly one tool call per turn, "
    "using the element refs in brackets. To choose in a select element, type the option's text into it. The task "
    "usually ends by itself when you submit; call finish when you are done or stuck."
)

_CHECKABLE = ("input_checkbox", "input_radio")
#: How many characters of an element's text and value are shown (miniwob's ``TEXT_MAX_LENGTH``).
SHOWN_CHARS = 256


def mark_cut(element: dict, *, text: Any, value: Any) -> dict:
    """``element`` (a raw element dict whose ``text`` / ``value`` were cut to :data:`SHOWN_CHARS`) with
    ``text_chars`` / ``value_chars`` set to the full length of ``text`` / ``value`` (the page's own, uncut) where
    that is longer than what is shown; returns the same dict."""
    for key, full in (("text", text), ("value", value)):
        if isinstance(full, str) and len(full) > SHOWN_CHARS:
            element[f"{key}_chars"] = len(full)
    return element


def _cut_note(element: Mapping[str, Any], key: str) -> list[str]:
    full = element.get(f"{key}_chars")
    return [f"({key} cut: {len(str(element.get(key) or ''))} of {full} chars shown)"] if full else []


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\r", "").replace("\n", "\\n") + "'"


def _checked(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def text_of(value: Any) -> str:
    """A Text observation value as a Python string: rlmesh may hand it over as a 0-d numpy array or bytes."""
    import numpy as np

    if isinstance(value, np.ndarray):
        value = value.item() if value.size == 1 else value.tolist()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def render_element(element: Mapping[str, Any]) -> str:
    """One element line without indentation, e.g. ``[6] input_text id=username value='kanesha' focused``.

    ``element`` is a raw element dict (the env's ``raw`` JSON): ``ref`` int, ``tag``, ``id``, ``classes``,
    ``text`` strings, ``value`` string (bool for checkboxes/radios), ``focused`` bool, ``text_chars`` /
    ``value_chars`` the full length of a cut text / value (:func:`mark_cut`); missing keys count as empty.
    """
    tag = str(element.get("tag") or "").lower()
    parts = [f"[{element.get('ref')}]", tag]
    if element.get("id"):
        parts.append(f"id={element['id']}")
    if element.get("classes"):
        parts.append(f"class={_quote(str(element['classes']))}")
    if element.get("text"):
        parts += [_quote(str(element["text"])), *_cut_note(element, "text")]
    value = element.get("value")
    if tag in _CHECKABLE:
        if _checked(value):
            parts.append("checked")
    elif value not in (None, "", False):
        parts += [f"value={_quote(str(value))}", *_cut_note(element, "value")]
    if element.get("focused"):
        parts.append("focused")
    return " ".join(parts)


def render_elements(elements: Iterable[Mapping[str, Any]]) -> str:
    """The elements as contract lines joined by ``\\n`` (no trailing newline), indented two spaces per depth.

    Depth follows ``parent`` refs within the list (an element whose parent is not listed is at depth 0); the
    order of ``elements`` (document order) is kept.
    """
    elements = list(elements)
    parent_of = {el.get("ref"): el.get("parent") for el in elements}
    depth_cache: dict[Any, int] = {}

    def depth(ref: Any) -> int:
        if ref in depth_cache:
            return depth_cache[ref]
        d, seen, cur = 0, {ref}, parent_of.get(ref)
        while cur in parent_of and cur not in seen:
            seen.add(cur)
            d += 1
            cur = parent_of.get(cur)
        depth_cache[ref] = d
        return d

    return "\n".join("  " * depth(el.get("ref")) + render_element(el) for el in elements)


def _error_line(error: str) -> str:
    if not error:
        return ""
    return (error if error.startswith("ERROR:") else f"ERROR: {error}") + "\n"


def first_user_message(goal: str, dom: str) -> str:
    """``GOAL: <goal>\\nDOM:\\n<elements>``: the first user message of an episode."""
    return f"GOAL: {goal}\nDOM:\n{dom}"


def tool_message(dom: str, error: str = "") -> str:
    """``DOM:\\n<elements>``, prefixed ``ERROR: <message>\\n`` when ``error`` is set (with or without its
    ``ERROR:`` prefix): the answer to each tool call."""
    return f"{_error_line(error)}DOM:\n{dom}"


def raw_message(raw: str, error: str = "") -> str:
    """The ``use_wrapper: false`` content: the raw observation JSON, prefixed ``ERROR: …\\n`` on errors."""
    return f"{_error_line(error)}{raw}"
