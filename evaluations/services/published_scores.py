"""Published success rates: the catalog's rows kept in step with the code, and an organization's own."""

from __future__ import annotations

from django.db import transaction

from ..models import Organization, PublishedScore
from ..models.published import model_key
from ..prebuilt.published import PUBLISHED

__all__ = ["add_published_score", "sync_published"]


@transaction.atomic
def sync_published() -> None:
    """Make the catalog's rows (``builtin``) exactly :data:`~evaluations.prebuilt.published.PUBLISHED` (idempotent);
    an operator's and the organizations' rows are left alone."""
    wanted = {(r["model"], r["benchmark"]): r for r in PUBLISHED}
    for row in PublishedScore.objects.filter(builtin=True):
        spec = wanted.pop((row.model, row.benchmark), None)
        if spec is None:
            row.delete()
        elif any(getattr(row, k) != v for k, v in spec.items()):
            PublishedScore.objects.filter(pk=row.pk).update(**spec)
    PublishedScore.objects.bulk_create([PublishedScore(builtin=True, **spec) for spec in wanted.values()])


def add_published_score(*, organization: Organization, user, model: str, benchmark: str, success_rate: float,
                        source: str, episodes: int | None = None) -> tuple[PublishedScore, bool]:
    """The organization's row for ``model`` (reduced to :func:`~evaluations.models.published.model_key`) and
    ``benchmark``, created or replaced; returns it and whether it was created."""
    with transaction.atomic():
        row, created = PublishedScore.objects.select_for_update().update_or_create(
            organization=organization, model=model_key(model), benchmark=benchmark,
            defaults={"success_rate": success_rate, "source": source, "episodes": episodes, "created_by": user})
    return row, created
