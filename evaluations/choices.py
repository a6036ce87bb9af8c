"""Statuses, roles and kinds used across the app."""

from django.db import models


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


class StopCondition(models.TextChoices):
    TERMINATED = "terminated", "env reached a terminal state"
    TIME_LIMIT = "time_limit", "env's own time limit (truncated)"
    MAX_STEPS = "max_steps", "the task's maxSteps cap"
    WALL_TIME = "wall_time", "the episode wall-time cap"
    STEP_BOUND = "step_bound", "rlmesh's built-in 100,000-step bound"
    ERROR = "error", "the episode failed"


class SuccessSource(models.TextChoices):
    ENV = "env", "the env's own info flag (is_success / success)"
    CRITERION = "criterion", "a declared success criterion (the request's, else the env's for the scenario)"
    #: Nothing defines success for the episode: no env flag, no criterion. Its return still counts.
    UNDEFINED = "undefined", "success undefined (no env flag, no criterion)"
    #: Legacy: episodes recorded before success could be undefined fell back to ``terminated``.
    TERMINATED = "terminated", "terminated (legacy guess; no longer made)"


class LogLevel(models.TextChoices):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
