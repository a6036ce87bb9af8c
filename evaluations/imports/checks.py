"""Type checks on result.json values that collect every problem with its ``result.json$``-prefixed JSON path."""

from __future__ import annotations

import math

from ..domain.text import display_text_problem
from .archive import RESULT_FILENAME

__all__ = ["Checker", "MAX_ERRORS", "MAX_INT64", "MAX_UINT32", "is_int", "is_number", "type_name"]

#: Largest values the Episode/Workload columns hold.
MAX_UINT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1

MAX_ERRORS = 50


def type_name(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) < 1e300 and math.isfinite(value)


class Checker:
    """Collects ``{"path", "message"}`` problems with ``result.json$``-prefixed paths."""

    def __init__(self):
        self.errors: list[dict] = []

    def add(self, path: str, message: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append({"path": f"{RESULT_FILENAME}{path}", "message": message})

    def string(self, obj: dict, key: str, path: str, *, required: bool = True, max_length: int = 300) -> str | None:
        value = obj.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            self.add(f"{path}.{key}", "is required: a non-empty string" if key not in obj else f"must be a non-empty string, got {type_name(value)}")
            return None
        if len(value) > max_length:
            self.add(f"{path}.{key}", f"is longer than {max_length} characters")
            return None
        if display_text_problem(value):
            self.add(f"{path}.{key}", display_text_problem(value))
            return None
        return value

    def integer(self, obj: dict, key: str, path: str, *, low: int, high: int, required: bool = True, nullable: bool = False):
        value = obj.get(key)
        if key not in obj and not required:
            return None
        if value is None and nullable and key in obj:
            return None
        if not is_int(value):
            self.add(f"{path}.{key}", f"must be an integer, got {type_name(value)}" if key in obj else "is required: an integer")
            return None
        if not low <= value <= high:
            self.add(f"{path}.{key}", f"must be between {low} and {high}, got {value}")
            return None
        return value

    def boolean(self, obj: dict, key: str, path: str, *, required: bool = True, nullable: bool = False, default=None):
        if key not in obj:
            if required:
                self.add(f"{path}.{key}", "is required: true or false")
            return default
        value = obj[key]
        if value is None and nullable:
            return None
        if not isinstance(value, bool):
            self.add(f"{path}.{key}", f"must be true or false{' or null' if nullable else ''}, got {type_name(value)}")
            return default
        return value

    def number(self, obj: dict, key: str, path: str, *, required: bool = True, low: float | None = None):
        if key not in obj and not required:
            return None
        value = obj.get(key)
        if not is_number(value):
            self.add(f"{path}.{key}", f"must be a finite number, got {type_name(value)}" if key in obj else "is required: a number")
            return None
        if low is not None and value < low:
            self.add(f"{path}.{key}", f"must be at least {low:g}, got {value}")
            return None
        return float(value)

