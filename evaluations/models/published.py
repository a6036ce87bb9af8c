"""Published success rates a model's scores are set against (reproduction verdicts, ``reports.reproduction``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from .organizations import Organization

__all__ = ["PublishedScore", "model_key"]


def model_key(reference: str) -> str:
    """What a published number names a model by: its reference without ``:tag`` or ``@digest``
    (``prebuilt/smolvla/libero``, ``lab/act-libero``), or an endpoint's display label as given (``pi05``)."""
    path = reference.split("@", 1)[0]
    head, _, last = path.rpartition("/")
    return f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]


class PublishedScoreQuerySet(models.QuerySet):
    def visible_to(self, organization: Organization | int) -> PublishedScoreQuerySet:
        """Everyone's rows (the catalog's and an operator's: no organization) and the organization's own (an
        organization or its id)."""
        org_id = getattr(organization, "pk", organization)
        return self.filter(models.Q(organization__isnull=True) | models.Q(organization_id=org_id))

    def for_models(self, organization: Organization | int, references) -> dict[tuple[str, str], PublishedScore]:
        """``{(model key, benchmark): row}`` for the models of ``references``: an organization's own row over an
        operator's, an operator's over the catalog's."""
        keys = {model_key(r) for r in references}
        rows = self.visible_to(organization).filter(model__in=keys)
        # The catalog's first, then an operator's, then the organization's: the last one for a key wins.
        ordered = sorted(rows, key=lambda r: 2 if r.organization_id else 0 if r.builtin else 1)
        return {(r.model, r.benchmark): r for r in ordered}


class PublishedScore(models.Model):
    """A model's published success rate on one benchmark (a LIBERO suite: ``libero_spatial``…), with its source.

    ``organization`` null: everyone sees it: the catalog's rows (``builtin``, rewritten on every ``migrate`` from
    ``prebuilt.published``) and an operator's (added in the admin). An organization's own rows are seen by it alone
    (``/v1/published-scores``) and take precedence over the others for the same model and benchmark."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="published_scores")
    model = models.CharField(max_length=300, help_text="model reference without tag or digest, or an endpoint's label")
    benchmark = models.CharField(max_length=100, help_text="e.g. libero_spatial, libero_10")
    success_rate = models.FloatField(help_text="a fraction in [0, 1]")
    episodes = models.PositiveIntegerField(null=True, blank=True, help_text="episodes behind it, when published")
    source = models.CharField(max_length=500, help_text="where it is published: paper, repository, run")
    builtin = models.BooleanField(default=False, help_text="the catalog's: rewritten on every migrate")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    objects = PublishedScoreQuerySet.as_manager()

    class Meta:
        ordering = ["model", "benchmark"]

    def __str__(self) -> str:
        return f"{self.model} {self.benchmark} {self.success_rate:.3f} ({self.source})"
