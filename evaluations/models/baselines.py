"""Baselines: per organization and tag value, the evaluation later evaluations with that tag are judged against."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from .evaluations import Evaluation
from .organizations import Organization

__all__ = ["Baseline"]


class BaselineQuerySet(models.QuerySet):
    def for_org(self, organization: Organization) -> BaselineQuerySet:
        """Only this organization's baselines."""
        return self.filter(organization=organization)

    def for_tags(self, tags: Iterable[tuple[str, str]]) -> BaselineQuerySet:
        """Baselines whose ``(key, value)`` is one of ``tags``."""
        q = models.Q(pk__in=[])
        for key, value in tags:
            q |= models.Q(tag_key=key, tag_value=value)
        return self.filter(q)


class Baseline(models.Model):
    """The reference evaluation for one tag value (e.g. ``suite:nightly``) of an organization.

    Every *completed* evaluation of the organization that carries the tag and was created after the baseline
    evaluation gets a regression verdict per task against it (``evaluations.reports.regressions``), computed on read.
    One baseline per (organization, tag key, tag value); setting another replaces it.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="baselines")
    tag_key = models.CharField(max_length=100)
    tag_value = models.CharField(max_length=200)
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="baseline_for")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = BaselineQuerySet.as_manager()

    class Meta:
        ordering = ["tag_key", "tag_value"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "tag_key", "tag_value"],
                name="evaluations_baseline_unique_tag",
                violation_error_message="This tag already has a baseline.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tag} → {self.evaluation_id}"

    @property
    def tag(self) -> str:
        """``key:value``, as list filters and the API spell a tag."""
        return f"{self.tag_key}:{self.tag_value}"

    def get_absolute_url(self) -> str:
        return reverse("evaluations:evaluation_detail", args=[self.evaluation.public_id])
