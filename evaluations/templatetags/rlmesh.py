"""Template filters for the dashboard."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone

from ..domain.outcomes import criterion_summary

register = template.Library()


@register.filter
def short_id(public_id: str, digits: int = 8) -> str:
    """``eval_3fa2c1d9e0b4a7f6`` → ``eval_3fa2c1d9…`` (the prefix and ``digits`` hex digits, as git shortens a
    commit): unique enough to tell rows apart; the full id is the cell's title and what its Copy button copies."""
    prefix, sep, rest = public_id.partition("_")
    if not sep or len(rest) <= digits:
        return public_id
    return f"{prefix}_{rest[:digits]}…"


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
def pvalue(p: float | None) -> str:
    """A p-value to four decimals, ``"< 0.0001"`` below that (never a bare 0.0000); ``"—"`` for None."""
    if p is None:
        return "—"
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"


@register.filter
def checks_passed(verifiers) -> str:
    """``"2/3 checks"`` for an agent rollout's verifiers (``""`` without any)."""
    if not verifiers:
        return ""
    return f"{sum(1 for v in verifiers if v.get('passed') is True)}/{len(verifiers)} checks"


@register.filter
def criterion(value) -> str:
    """What a scenario's success criterion means in words (``"undefined"`` without one; see domain.outcomes)."""
    return criterion_summary(value if isinstance(value, dict) else None)


@register.filter
def weights_note(version, checkpoint: str) -> str:
    """For a checkpoint whose weights an operator installs: ``"weights installed"`` or ``"needs weights: <settings>
    (<docs page>)"``; ``""`` for any other checkpoint (services.weights)."""
    from ..services.weights import weights_status

    row = next((r for r in weights_status(version.checkpoints) if r["checkpoint"] == checkpoint), None)
    if row is None:
        return ""
    return "weights installed" if row["installed"] else f"needs weights: {', '.join(row['settings'])} ({row['docs']})"
