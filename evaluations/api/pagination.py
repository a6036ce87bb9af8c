"""Cursor pagination of /v1 lists: ``?limit=`` and ``?cursor=`` in, ``{"items", "nextCursor"}`` out (the shape the
official client pages through, spec/PLATFORM_API.md). A cursor is the last item's sort key as dot-separated whole
numbers (a time as microseconds since the epoch, then the row id), so the schema can state its form exactly
(``CURSOR_PATTERNS``) and every string of that form is a cursor the API reads; anything else is a 400 on ``cursor``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from django.db.models import Q
from rest_framework.exceptions import ValidationError

from ..domain.numbers import whole_number

__all__ = ["CURSOR_PATTERNS", "decode_cursor", "encode_cursor", "newest_first_page", "page_limit", "query_value", "take_page"]

#: The message of a cursor that does not decode, naming the field the list answered with (``nextCursor`` on /v1,
#: ``next_cursor`` on the snake_case /agents family).
_INVALID = "invalid cursor; pass the {field} of the previous page"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Digits per part: 16 for microseconds (until the year 2286), 18 for ids (below SQLite's and PostgreSQL's bigint).
_DIGITS = {datetime: 16, int: 18}
#: The form of each kind of cursor, by its sort key's types, as the schema states it.
CURSOR_PATTERNS = {key: "^" + r"\.".join(f"[0-9]{{1,{_DIGITS[t]}}}" for t in key) + "$"
                   for key in [(datetime, int), (int,)]}


def encode_cursor(*key) -> str:
    """A cursor for the sort key ``key`` (datetimes and non-negative ints)."""
    return ".".join(str((v - _EPOCH) // timedelta(microseconds=1)) if isinstance(v, datetime) else str(v) for v in key)


def decode_cursor(cursor: str, *types: type, field: str = "nextCursor") -> list:
    """The sort key a cursor holds, one value per entry of ``types`` (``datetime`` or ``int``); ValidationError on
    ``cursor`` unless it matches ``CURSOR_PATTERNS[types]``, naming ``field`` (the response field that carries
    the next cursor) as what to pass."""
    if not re.fullmatch(CURSOR_PATTERNS[types], cursor, flags=re.ASCII):
        raise ValidationError({"cursor": [_INVALID.format(field=field)]})
    return [_EPOCH + timedelta(microseconds=int(part)) if kind is datetime else int(part)
            for part, kind in zip(cursor.split("."), types)]


def query_value(request, name: str) -> str | None:
    """The query parameter ``name``, None when it is absent or empty: across the API an empty value means the
    parameter is unset (as the dashboard's filter bar sends an unset select or text box)."""
    return request.query_params.get(name) or None


def page_limit(request, *, default: int, maximum: int) -> int:
    """``?limit=``: absent → ``default``; a whole number from 1 up, and a larger one than ``maximum`` is served as
    ``maximum`` (the page then says ``nextCursor``); empty is absent. 0, a negative number or a non-integer is a 400 on ``limit``
    that says the range: a page of zero items is no page (the CLI sends ``--limit`` as given, even 0)."""
    raw = query_value(request, "limit")
    if raw is None:
        return default
    limit = whole_number(raw)
    if limit is None or limit < 1:
        raise ValidationError({"limit": [f"must be a whole number from 1 to {maximum} (got {raw!r}); larger values "
                                         f"are served as {maximum}, absent means {default}"]})
    return min(limit, maximum)


def take_page(queryset, limit: int) -> tuple[list, bool]:
    """The first ``limit`` rows of ``queryset`` and whether more follow (one query)."""
    page = list(queryset[: limit + 1])
    return page[:limit], len(page) > limit


def newest_first_page(queryset, request, limit: int, *, cursor_field: str = "nextCursor") -> tuple[list, str | None]:
    """One page of ``queryset`` ordered by ``(-created_at, -id)`` after ``?cursor=`` (keyset paging: stable while
    rows are added); returns ``(rows, next_cursor)``, ``next_cursor`` None on the last page. 400 on ``cursor`` if it
    does not decode, telling to pass ``cursor_field`` (the list's name for the next cursor)."""
    queryset = queryset.order_by("-created_at", "-id")
    cursor = query_value(request, "cursor")
    if cursor:
        created_at, pk = decode_cursor(cursor, datetime, int, field=cursor_field)
        queryset = queryset.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=pk))
    page, more = take_page(queryset, limit)
    last = page[-1] if page else None
    return page, (encode_cursor(last.created_at, last.pk) if more else None)
