"""Typed readers of environment variables for the settings: a malformed value fails start-up loudly
(``ImproperlyConfigured``) instead of silently becoming a default."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

__all__ = ["env_bool", "env_float", "env_int", "env_list", "env_str"]


def env_str(name: str, default: str = "") -> str:
    """Return ``$name``, or the contents of the file named by ``$name_FILE``, or ``default``."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    """Return ``$name`` as a bool; only ``True``/``False`` (any case) or ``1``/``0`` are accepted."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0"):
        return False
    raise ImproperlyConfigured(f"{name} must be True or False, got {raw!r}")


def _env_number(name: str, default, cast, noun: str):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return cast(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be {noun}, got {raw!r}") from exc


def env_int(name: str, default: int) -> int:
    """Return ``$name`` as an int; raises ImproperlyConfigured on a non-integer."""
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    """Return ``$name`` as a float; raises ImproperlyConfigured on a non-number."""
    return _env_number(name, default, float, "a number")


def env_list(name: str, default: str = "") -> list[str]:
    """Return ``$name`` split on commas, blanks dropped."""
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]
