"""Step 1 of planning: a request body becomes a schema-valid request object, or a :class:`RequestInvalid` naming the
JSON path of every problem. Also used for other JSON the platform accepts (result bundles)."""

from __future__ import annotations

import json

__all__ = ["MAX_JSON_DEPTH", "RequestInvalid", "check_json_values", "model_path", "parse_request_body"]

#: Deepest nesting of objects/arrays a request may have.
MAX_JSON_DEPTH = 32


class RequestInvalid(Exception):
    """A request that cannot be run. ``errors`` is ``[{"path", "message"}]``; ``status`` the HTTP status."""

    def __init__(self, errors: list[dict], *, code: str = "invalid_request", status: int = 400):
        self.errors = errors
        self.code = code
        self.status = status
        first = errors[0]
        message = f"{first['path']}: {first['message']}" if first["path"] not in ("", "$") else first["message"]
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more)"
        super().__init__(message)


def model_path(data: dict, index: int) -> str:
    """The JSON path of model ``index``'s reference as the request wrote it: ``models[i].model``, or ``model.model``
    for the one-model shorthand."""
    return f"models[{index}].model" if "models" in data else "model.model"


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def loads_strict(text: str):
    """``json.loads`` that refuses NaN/Infinity (ValueError) besides the usual JSONDecodeError/RecursionError."""
    return json.loads(text, parse_constant=_reject_constant)


def parse_request_body(body: bytes) -> dict:
    """Decode a request body as a JSON object.

    Raises RequestInvalid for bad UTF-8 or JSON, NaN/Infinity, integers too long to convert, nesting
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


#: Django's own wording (the serializers' text fields say it too). PostgreSQL cannot store \u0000 in text or jsonb.
_NUL = "Null characters are not allowed."


def check_json_values(data) -> dict | None:
    """First problem in a parsed JSON value (too deep, or a string/key that is not valid Unicode or holds a NUL, which
    PostgreSQL cannot store in text or jsonb), or None."""
    stack = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return {"path": path or "$", "message": f"nests deeper than {MAX_JSON_DEPTH} levels"}
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return {"path": path or "$", "message": "contains an unpaired surrogate (not valid Unicode)"}
            if "\x00" in value:
                return {"path": path or "$", "message": _NUL}
        elif isinstance(value, dict):
            for key, item in value.items():
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return {"path": path or "$", "message": "has a key with an unpaired surrogate (not valid Unicode)"}
                if "\x00" in key:
                    return {"path": path or "$", "message": "has a key with a null character: " + _NUL}
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
    return None
