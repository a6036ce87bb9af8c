"""Numbers in query strings and form fields, read as the API schema means them (``integer``, ``number``): ASCII
digits only, no sign, underscore or surrounding space — what Python's ``int()``/``float()`` accept beyond that
(``1_0``, ``+1``, `` 1``, full-width ``１``, ``inf``) is not a number on the wire."""

from __future__ import annotations

import re

__all__ = ["decimal_number", "whole_number"]

#: A whole number as the schema's ``integer`` means it: ASCII digits only. Python's ``int()`` also reads ``1_0``,
#: ``+1``, `` 1`` and other scripts' digits (full-width ``１``), which are not integers on the wire.
_WHOLE = re.compile(r"[0-9]+", flags=re.ASCII)
#: A decimal number as JSON writes one (no sign, since no number parameter is negative): what ``float()`` reads
#: beyond it (``0_1``, ``inf``, `` .1``, other scripts' digits) is refused.
_DECIMAL = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?", flags=re.ASCII)


def whole_number(raw: str) -> int | None:
    """``raw`` as a non-negative int when it is ASCII digits only, else None (the caller answers 400); more than 18
    significant digits read as 10**18 (every cap is below it; ``int()`` refuses past 4,300 digits)."""
    if not _WHOLE.fullmatch(raw):
        return None
    digits = raw.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18


def decimal_number(raw: str) -> float | None:
    """``raw`` as a float when it is a plain unsigned decimal (``0.05``, ``5e-2``), else None."""
    return float(raw) if _DECIMAL.fullmatch(raw) else None
