"""Template filters for the dashboard."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone

from ..domain.outcomes import criterion_summary

register = template.Library()


@register.filter
def duration(start: datetime | None, end: datetime | None = None) -> str:
    """Human duration from ``start`` to ``end`` (now when None): ``"850 ms"``, ``"12.4 s"``, ``"3 min 05 s"``,
    ``"2 h 07 min"``; ``"—"`` without a start."""
    if start is None:
        return "—"
    delta: timedelta = (end or timezone.now()) - start
    seconds = max(0.0, delta.total_seconds())
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


@register.filter
def criterion(value) -> str:
    """What a scenario's success criterion means in words (``"undefined"`` without one; see domain.outcomes)."""
    return criterion_summary(value if isinstance(value, dict) else None)
