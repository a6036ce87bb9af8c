"""Baselines: mark an evaluation as the reference for a tag value, or stop having one."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from ..choices import EvaluationStatus
from ..models import Baseline, Evaluation, Organization

__all__ = ["BaselineRefused", "parse_tag", "set_baseline", "unset_baseline"]


class BaselineRefused(Exception):
    """A baseline change that is not allowed; ``str()`` says why. ``conflict`` is True when the evaluation's state
    refuses it (it has not completed, or does not carry the tag), False when the request is malformed (a tag
    without ``key:``)."""

    def __init__(self, message: str, *, conflict: bool = False):
        super().__init__(message)
        self.conflict = conflict


def parse_tag(tag: str) -> tuple[str, str]:
    """``key:value`` → ``(key, value)`` (the value may hold colons). Raises BaselineRefused for a tag without a
    key or without ``:``."""
    key, sep, value = tag.partition(":")
    if not sep or not key or "\x00" in tag:
        raise BaselineRefused(f'tag "{tag}" must look like key:value')
    return key, value


def set_baseline(*, organization: Organization, tag: str, evaluation: Evaluation, user=None) -> tuple[Baseline, bool]:
    """Make ``evaluation`` the baseline of ``tag`` in ``organization``, replacing the previous one.

    Returns ``(baseline, created)``. Raises BaselineRefused when the tag is malformed or the evaluation does not
    carry it, and (``conflict``) when the evaluation has not completed: a baseline is a finished run.
    """
    key, value = parse_tag(tag)
    if evaluation.organization_id != organization.pk:
        raise ValueError("the evaluation belongs to another organization")
    if evaluation.tags.get(key) != value:
        raise BaselineRefused(f"evaluation {evaluation.public_id} is not tagged {key}:{value}", conflict=True)
    if evaluation.status != EvaluationStatus.COMPLETED:
        raise BaselineRefused(f"evaluation {evaluation.public_id} is {evaluation.status}; only a completed evaluation "
                              "can be a baseline", conflict=True)
    with transaction.atomic():
        return Baseline.objects.update_or_create(
            organization=organization, tag_key=key, tag_value=value,
            defaults={"evaluation": evaluation, "created_by": user, "created_at": timezone.now()},
        )


def unset_baseline(*, organization: Organization, tag: str, evaluation: Evaluation | None = None) -> bool:
    """Remove the baseline of ``tag`` (later evaluations then get no verdict); with ``evaluation``, only while it
    is that tag's baseline (a page showing an older state unsets nothing else). Returns whether one was removed.
    Raises BaselineRefused for a malformed tag."""
    key, value = parse_tag(tag)
    baselines = Baseline.objects.for_org(organization).filter(tag_key=key, tag_value=value)
    if evaluation is not None:
        baselines = baselines.filter(evaluation=evaluation)
    deleted, _ = baselines.delete()
    return bool(deleted)
