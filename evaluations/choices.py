"""Statuses, roles and kinds used across the app."""

from django.db import models

from .domain import outcomes


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"


#: Roles from least to most privileged: a credential never has more rights than its creator's current role.
ROLE_ORDER = (Role.VIEWER, Role.MEMBER, Role.ADMIN, Role.OWNER)


def lesser_role(a: str, b: str) -> str:
    """The less privileged of two roles (``ROLE_ORDER``)."""
    return min(a, b, key=ROLE_ORDER.index)


#: Roles that may submit evaluations (and cancel their own).
WRITE_ROLES = frozenset({Role.OWNER, Role.ADMIN, Role.MEMBER})
#: Roles that manage keys and members, and may cancel anyone's evaluation.
ADMIN_ROLES = frozenset({Role.OWNER, Role.ADMIN})


def may_cancel(*, role: str, user, evaluation) -> bool:
    """Admins and owners cancel any evaluation of their organization; members only their own."""
    if role in ADMIN_ROLES:
        return True
    return role == Role.MEMBER and user is not None and evaluation.creator_id == user.pk


def cancel_refusal(role: str) -> str:
    """Why ``may_cancel`` said no, in words for the user."""
    return "viewers cannot cancel evaluations" if role == Role.VIEWER else "members may cancel only their own evaluations"


class ImageKind(models.TextChoices):
    ENV = "env"
    MODEL = "model"


class ProbeStatus(models.TextChoices):
    """Where an image version stands; only ``passed`` versions may be used."""

    QUEUED = "queued"
    PROBING = "probing"
    PASSED = "passed"
    FAILED = "failed"
    #: Deleted by its owner; kept (hidden) while a finished evaluation's workload references it.
    DELETED = "deleted"


class EvaluationStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: Exactly these are terminal for the official clients.
TERMINAL_STATUSES = frozenset({EvaluationStatus.COMPLETED, EvaluationStatus.FAILED, EvaluationStatus.CANCELLED})
ACTIVE_STATUSES = frozenset({EvaluationStatus.QUEUED, EvaluationStatus.RUNNING, EvaluationStatus.CANCELLING})


class ShardStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class EpisodeStatus(models.TextChoices):
    COMPLETED = "completed"
    ERROR = "error"


#: Why an episode ended, and where its success verdict came from: the domain's vocabulary
#: (:mod:`evaluations.domain.outcomes`, which runs without Django) as Django choices, with their labels.
StopCondition = models.TextChoices("StopCondition", [(m.name, (m.value, outcomes.STOP_LABELS[m]))
                                                     for m in outcomes.StopCondition])
SuccessSource = models.TextChoices("SuccessSource", [(m.name, (m.value, outcomes.SUCCESS_SOURCE_LABELS[m]))
                                                     for m in outcomes.SuccessSource])


class LogLevel(models.TextChoices):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
