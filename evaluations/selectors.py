"""Read querysets shared by the API and the dashboard, so both show the same rows with the same queries."""

from __future__ import annotations

from django.db.models import Count, Prefetch, Q, QuerySet

from .choices import EpisodeStatus, lesser_role
from .models import ApiKey, Evaluation, ImageRepository, Membership, Organization, Workload

__all__ = ["api_keys_with_effective_role", "evaluation_detail_queryset", "images_visible_to"]


_VERSION_DETAIL_FIELDS = ("describe", "probe_log", "labels", "checkpoints")


def evaluation_detail_queryset() -> QuerySet[Evaluation]:
    """Evaluations with their creator and workloads (each with its image versions and ``done``/``errored`` episode
    counts) preloaded: what the detail page and ``GET /v1/evaluations/{id}`` render. Scope it with ``for_org``."""
    # Pages show the versions' digests and scenario names; their describe output, probe log and labels are large JSON.
    heavy = [f"{side}__{field}" for side in ("model_version", "env_version") for field in _VERSION_DETAIL_FIELDS]
    workloads = Workload.objects.select_related("model_version", "env_version").defer(*heavy).annotate(
        done=Count("episode_set"), errored=Count("episode_set", filter=Q(episode_set__status=EpisodeStatus.ERROR))
    )
    return Evaluation.objects.select_related("creator").prefetch_related(Prefetch("workloads", queryset=workloads))


def images_visible_to(organization: Organization) -> QuerySet[ImageRepository]:
    """The repositories the organization may use (its own namespace and ``prebuilt``) with their current version and
    every version preloaded."""
    return ImageRepository.objects.visible_to(organization).select_related("current_version").prefetch_related("versions")


def api_keys_with_effective_role(organization: Organization) -> list[ApiKey]:
    """The organization's keys, each with ``effective_role`` (capped by its creator's current role) and
    ``inactive_reason`` when its creator left, exactly as the API authenticates them."""
    keys = list(ApiKey.objects.filter(organization=organization).select_related("user"))
    roles = dict(Membership.objects.filter(organization=organization, user_id__in={k.user_id for k in keys})
                 .values_list("user_id", "role"))
    for key in keys:
        key.inactive_reason = ""
        key.effective_role = key.role
        if key.user_id is not None:
            creator_role = roles.get(key.user_id)
            if creator_role is None:
                key.inactive_reason = "creator left"
            else:
                key.effective_role = lesser_role(key.role, creator_role)
    return keys
