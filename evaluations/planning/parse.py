"""Step 1 of planning: a request body becomes a schema-valid request object, or a :class:`RequestInvalid` naming the
JSON path of every problem. Also used for other JSON the platform accepts (result bundles)."""

from __future__ import annotations

import json

from ..domain.text import storable_text_problem

__all__ = ["MAX_JSON_DEPTH", "RequestInvalid", "check_json_values", "model_path", "parse_request_body"]

#: Deepest nesting of objects/arrays a request may have.
MAX_JSON_DEPTH = 32


#: Problems listed one by one in an error (the rest are counted), and characters of a path or message quoted: an
#: error never grows with what the request carries (a field case: 2,000 unknown 500-character verifier keys were
#: echoed back as a 1.1 MB 400).
MAX_LISTED_ERRORS = 50
MAX_ERROR_TEXT = 300


def bounded_errors(errors: list[dict]) -> list[dict]:
    """``errors`` (``[{"path", "message", …}]``) with at most MAX_LISTED_ERRORS entries and the rest counted in one
    more at ``$`` (at most one entry more in all), each path and message cut to MAX_ERROR_TEXT characters."""
    def clip(value):
        return value[:MAX_ERROR_TEXT] + "…" if isinstance(value, str) and len(value) > MAX_ERROR_TEXT else value

    shown = errors if len(errors) <= MAX_LISTED_ERRORS + 1 else errors[:MAX_LISTED_ERRORS]  # so bounding twice is once
    listed = [{k: clip(v) if k in ("path", "message") else v for k, v in e.items()} for e in shown]
    if len(shown) < len(errors):
        more = len(errors) - MAX_LISTED_ERRORS
        listed.append({"path": "$", "message": f"{more:,} more problem{'s' if more != 1 else ''} not listed"})
    return listed


class RequestInvalid(Exception):
    """A request that cannot be run. ``errors`` is ``[{"path", "message"}]`` (bounded: :func:`bounded_errors`);
    ``status`` the HTTP status."""

    def __init__(self, errors: list[dict], *, code: str = "invalid_request", status: int = 400):
        errors = bounded_errors(errors)
        self.errors = errors
        self.code = code
        self.status = status
        first = errors[0]
        message = f"{first['path']}: {first['message']}" if first["path"] not in ("", "$") else first["message"]
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more)"
        super().__init__(message)


def model_path(data: dict, index: int) -> str:
    """The JSON path of model ``index``'s reference as the request wrote it: ``models[i]`` (or ``model``, the
    one-model shorthand) when the entry is the reference string itself, ``models[i].model`` (``model.model``) when
    it is an object holding it."""
    if "models" in data:
        entries = data["models"] if isinstance(data["models"], list) else []
        entry, path = (entries[index] if index < len(entries) else None), f"models[{index}]"
    else:
        entry, path = data.get("model"), "model"
    return path if isinstance(entry, str) else f"{path}.model"


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        quoted = repeated if len(repeated) <= 100 else repeated[:100] + "…"
        raise ValueError(f'the key "{quoted}" appears twice in one object (which of its values counts would be '
                         "up to the reader)")
    return obj


#: The largest seed a task takes (``tasks[i].seed``: 0 to 2**62, so every episode's ``seed + i`` fits a bigint).
MAX_SEED = 2**62
#: Digits past which a JSON integer is not converted (Python refuses past 4,300; no field takes more than 19).
_MAX_INT_DIGITS = 100


class TooLongInteger(int):
    """A JSON integer of more than ``_MAX_INT_DIGITS`` digits, kept as its digit count (``digits``) so the check of
    the parsed body can refuse it at its path (``json.loads`` would fail without one)."""

    digits: int


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits <= _MAX_INT_DIGITS:
        return int(text)
    value = TooLongInteger(-1 if text.startswith("-") else 1)
    value.digits = digits
    return value


def loads_strict(text: str):
    """``json.loads`` that refuses NaN/Infinity and a key repeated within one object (ValueError naming it), besides
    the usual JSONDecodeError/RecursionError. The raw body is stored and shown as submitted, so it must mean one
    thing to every reader (RFC 8259 §4: names SHOULD be unique)."""
    return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys, parse_int=_parse_int)


def parse_request_body(body: bytes) -> dict:
    """Decode a request body as a JSON object.

    Raises RequestInvalid for bad UTF-8 or JSON, NaN/Infinity, a key repeated in one object, integers too long to convert, nesting
    deeper than ``MAX_JSON_DEPTH``, strings with lone surrogates (they cannot be stored or echoed as
    UTF-8), or a top level that is not an object.
    """
    try:
        data = loads_strict(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise RequestInvalid([{"path": "$", "message": "request body is not UTF-8"}], code="parse_error") from None
    except json.JSONDecodeError as exc:
        raise RequestInvalid(
            [{"path": "$", "message": f"request body is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"}],
            code="parse_error",
        ) from None
    except RecursionError:
        raise RequestInvalid([{"path": "$", "message": f"request body nests deeper than {MAX_JSON_DEPTH} levels"}]) from None
    except ValueError as exc:  # NaN/Infinity, or an integer beyond Python's digit limit
        raise RequestInvalid([{"path": "$", "message": f"request body is not acceptable JSON: {exc}"}], code="parse_error") from None
    problem = check_json_values(data)
    if problem:
        raise RequestInvalid([problem])
    if not isinstance(data, dict):
        raise RequestInvalid(
            [{"path": "$", "message": f"request body must be a JSON object, got {type(data).__name__ if data is not None else 'null'}"}]
        )
    return data


def _string_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate (not valid Unicode)"
    return storable_text_problem(text)


def check_json_values(data) -> dict | None:
    """First problem in a parsed JSON value, or None: nesting deeper than ``MAX_JSON_DEPTH``, an integer of more than
    100 digits (:class:`TooLongInteger`), or a string or key that is
    not valid Unicode or holds a NUL (which PostgreSQL cannot store: both databases refuse it alike)."""
    stack = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return {"path": path or "$", "message": f"nests deeper than {MAX_JSON_DEPTH} levels"}
        if isinstance(value, TooLongInteger):
            return {"path": path or "$", "message": f"is a whole number of {value.digits} digits, larger than any field "
                    f"of a request takes (a seed is a whole number from 0 to {MAX_SEED}, 2**62; counts are capped lower)"}
        if isinstance(value, str):
            problem = _string_problem(value)
            if problem:
                return {"path": path or "$", "message": problem}
        elif isinstance(value, dict):
            for key, item in value.items():
                problem = _string_problem(key)
                if problem:
                    return {"path": path or "$", "message": f"has a key that {problem}"}
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
    return None
