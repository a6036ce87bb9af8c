"""Cursor pagination of /v1 lists: ``?limit=`` and ``?cursor=`` in, ``{"items", "nextCursor"}`` out (the shape the
official client pages through, spec/PLATFORM_API.md). A cursor is the url-safe base64 of a JSON array of the last
item's sort key; a cursor that does not decode is a 400 on ``cursor``."""

from __future__ import annotations

import base64
import json
from datetime import datetime

from django.db.models import Q
from django.utils.dateparse import parse_datetime
from rest_framework.exceptions import ValidationError

__all__ = ["decode_cursor", "encode_cursor", "newest_first_page", "page_limit", "query_value", "take_page"]

_INVALID = "invalid cursor; pass the nextCursor of the previous page"


def encode_cursor(*key) -> str:
    """A cursor for the sort key ``key`` (JSON-serializable values)."""
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, *types: type) -> list:
    """The sort key a cursor holds, each value checked against ``types`` (``datetime`` values are parsed from ISO
    8601); ValidationError on ``cursor`` otherwise."""
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(values, list) or len(values) != len(types):
            raise ValueError
        out = []
        for value, kind in zip(values, types):
            if kind is datetime:
                value = parse_datetime(value) if isinstance(value, str) else None
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ValueError
            out.append(value)
        return out
    except (ValueError, TypeError, UnicodeDecodeError):
        raise ValidationError({"cursor": [_INVALID]}) from None


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
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if limit < 1:
        raise ValidationError({"limit": [f"must be a whole number from 1 to {maximum} (got {raw!r}); larger values "
                                         f"are served as {maximum}, absent means {default}"]})
    return min(limit, maximum)


def take_page(queryset, limit: int) -> tuple[list, bool]:
    """The first ``limit`` rows of ``queryset`` and whether more follow (one query)."""
    page = list(queryset[: limit + 1])
    return page[:limit], len(page) > limit


def newest_first_page(queryset, request, limit: int) -> tuple[list, str | None]:
    """One page of ``queryset`` ordered by ``(-created_at, -id)`` after ``?cursor=`` (keyset paging: stable while
    rows are added); returns ``(rows, next_cursor)``, ``next_cursor`` None on the last page. 400 on ``cursor`` if it
    does not decode."""
    queryset = queryset.order_by("-created_at", "-id")
    cursor = query_value(request, "cursor")
    if cursor:
        created_at, pk = decode_cursor(cursor, datetime, int)
        queryset = queryset.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=pk))
    page, more = take_page(queryset, limit)
    last = page[-1] if page else None
    return page, (encode_cursor(last.created_at.isoformat(), last.pk) if more else None)
