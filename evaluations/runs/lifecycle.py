"""Every status change of an evaluation and its shards, in one place.

Submit (``create_evaluation``) → claim a shard (``claim_shard``) → record its episodes (``record_episode``) and keep
its heartbeat (``heartbeat``) → end it (``end_shard``) → finalize the evaluation when its last shard ended
(``finalize_evaluation``); ``cancel_evaluation`` and the reaper (``reap_shards``) move the same rows. Each change
is a conditional UPDATE, so concurrent workers, re-delivered messages and the reaper never double-count or
overwrite a finished row. Messages are sent only through :mod:`evaluations.dispatch`.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from ..choices import EpisodeStatus, EvaluationStatus, LogLevel, ShardStatus
from ..models import ApiKey, Episode, Evaluation, EvaluationLog, Organization, Shard, Workload
from ..domain.text import nul_free
from ..planning import Plan
from .. import dispatch
from .db import survives_restarts
from .workers import worker_identity

__all__ = [
    "CancelRefused",
    "add_warnings",
    "cancel_evaluation",
    "claim_shard",
    "create_evaluation",
    "end_shard",
    "finalize_evaluation",
    "heartbeat",
    "is_stopping",
    "log",
    "record_episode",
    "fail_lost_shard",
    "fail_stalled_evaluation",
    "requeue_lost_shard",
    "still_claimed",
]

logger = logging.getLogger(__name__)


def _count(n: int, noun: str) -> str:
    """``"1 shard"``, ``"3 shards"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def create_evaluation(*, plan: Plan, raw_body: str, organization: Organization, creator=None, api_key: ApiKey | None = None) -> Evaluation:
    """Write the evaluation, its workloads and shards in one transaction; enqueue every shard on commit.

    Returns the new Evaluation (status ``queued``). Nothing is written if any insert fails.
    """
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            organization=organization, creator=creator, api_key=api_key, request_raw=plan.stored_raw(raw_body),
            **plan.evaluation_fields()
        )
        shard_ids: list[int] = []
        for index, planned in enumerate(plan.workloads):
            workload = Workload.objects.create(evaluation=evaluation, index=index, **planned.row_fields())
            shards = Shard.objects.bulk_create(
                Shard(evaluation=evaluation, workload=workload, index=i, start=start, stop=stop)
                for i, (start, stop) in enumerate(planned.task.shards)
            )
            shard_ids.extend(s.pk for s in shards)
        log(evaluation, f"submitted: {_count(len(plan.workloads), 'workload')}, {_count(len(shard_ids), 'shard')}, "
                        f"{_count(plan.total_episodes, 'episode')}")
        dispatch.send_shards(shard_ids)
    return evaluation


class CancelRefused(Exception):
    """The evaluation already ended; ``str()`` says how."""


def cancel_evaluation(evaluation: Evaluation) -> Evaluation:
    """Ask an active evaluation to stop.

    Queued shards are cancelled at once; running shards stop between episodes. The evaluation becomes
    ``cancelling`` and then ``cancelled`` once no shard runs (immediately if none was running).
    Cancelling a ``cancelling`` evaluation is a no-op. Raises CancelRefused for a terminal one.
    """
    with transaction.atomic():
        changed = Evaluation.objects.filter(
            pk=evaluation.pk, status__in=[EvaluationStatus.QUEUED, EvaluationStatus.RUNNING]
        ).update(status=EvaluationStatus.CANCELLING, updated_at=timezone.now())
        evaluation.refresh_from_db()
        if not changed and evaluation.status != EvaluationStatus.CANCELLING:
            raise CancelRefused(f"evaluation {evaluation.public_id} is already {evaluation.status}")
        Shard.objects.filter(evaluation=evaluation, status=ShardStatus.QUEUED).update(
            status=ShardStatus.CANCELLED, finished_at=timezone.now()
        )
        if changed:
            log(evaluation, "cancellation requested")
    finalize_evaluation(evaluation.pk)
    evaluation.refresh_from_db()
    return evaluation


@survives_restarts
def claim_shard(shard_id: int) -> Shard | None:
    """Claim a queued shard for this process with a conditional UPDATE; None if someone else has it or it ended.

    Also moves its evaluation from ``queued`` to ``running``. A duplicate delivery of the same task
    therefore does nothing.
    """
    now = timezone.now()
    with transaction.atomic():
        claimed = Shard.objects.filter(pk=shard_id, status=ShardStatus.QUEUED).update(
            status=ShardStatus.RUNNING,
            claimed_by=worker_identity(),
            heartbeat_at=now,
            started_at=now,
            attempts=F("attempts") + 1,
        )
        if not claimed:
            return None
        shard = Shard.objects.select_related("workload", "evaluation").get(pk=shard_id)
        Evaluation.objects.filter(pk=shard.evaluation_id, status=EvaluationStatus.QUEUED).update(
            status=EvaluationStatus.RUNNING, started_at=now, updated_at=now
        )
    shard.evaluation.refresh_from_db()
    return shard


@survives_restarts
def record_episode(*, shard: Shard, index: int, **fields) -> bool:
    """Insert the outcome of episode ``index`` of the shard's workload, once.

    Returns True if this call recorded it, False if it was already there (a re-delivered shard); the
    evaluation's progress counters move only in the first case, in the same transaction.
    """
    errored = fields.get("status") == EpisodeStatus.ERROR
    try:
        with transaction.atomic():
            Episode.objects.create(
                evaluation_id=shard.evaluation_id, workload_id=shard.workload_id, shard=shard, index=index, **fields
            )
            Evaluation.objects.filter(pk=shard.evaluation_id).update(
                completed_episodes=F("completed_episodes") + 1,
                errored_episodes=F("errored_episodes") + (1 if errored else 0),
                updated_at=timezone.now(),
            )
            Shard.objects.filter(pk=shard.pk).update(heartbeat_at=timezone.now())
            stored = sum(fields[meta].get("bytes", 0) for file, meta in (("video", "video_meta"), ("steps_file", "steps_meta"))
                         if fields.get(file))
            if stored:
                Organization.objects.get(evaluations__pk=shard.evaluation_id).add_storage(stored)
    except IntegrityError:
        return False
    return True


@survives_restarts
def finalize_evaluation(evaluation_id: int) -> str | None:
    """End the evaluation if none of its shards is queued or running; return the final status, else None.

    ``cancelling`` → ``cancelled``; past its deadline → ``failed``; more errored episodes than
    ``RLMESH_MAX_ERROR_FRACTION`` (an agent run's config: 1.0) of the total → ``failed`` with the first error; else
    ``completed``. An evaluation with a ``webhook_url`` then gets its webhook sent (``dispatch.send_webhook``).
    Safe to call concurrently: the final conditional UPDATE lets exactly one caller win.
    """
    if Shard.objects.filter(evaluation_id=evaluation_id, status__in=[ShardStatus.QUEUED, ShardStatus.RUNNING]).exists():
        return None
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    if evaluation.is_terminal:
        return None
    message = ""
    if evaluation.status == EvaluationStatus.CANCELLING:
        status = EvaluationStatus.CANCELLED
    else:
        failed_shard = Shard.objects.filter(evaluation_id=evaluation_id, status=ShardStatus.FAILED).first()
        deadline = evaluation.deadline
        errors = Episode.objects.filter(evaluation_id=evaluation_id, status=EpisodeStatus.ERROR)
        n_errors = errors.count()
        missing = evaluation.total_episodes - evaluation.completed_episodes
        if deadline is not None and timezone.now() >= deadline and missing > 0:
            status, message = EvaluationStatus.FAILED, f"timed out after {evaluation.timeout_seconds:g} s with {missing} episodes not run"
        elif failed_shard is not None and missing > 0:
            status, message = EvaluationStatus.FAILED, f"a shard failed: {failed_shard.error or 'unknown error'}"
        elif n_errors > _max_error_fraction(evaluation) * evaluation.total_episodes:
            first = errors.order_by("finished_at").first()
            status = EvaluationStatus.FAILED
            message = f"{n_errors} of {evaluation.total_episodes} episodes errored; first error: {first.error}"
        else:
            status = EvaluationStatus.COMPLETED
    now = timezone.now()
    won = Evaluation.objects.filter(pk=evaluation_id, status=evaluation.status).update(
        status=status, error_message=message, finished_at=now, updated_at=now
    )
    if not won:
        return None
    evaluation.status = status
    log(evaluation, f"{status}" + (f": {message}" if message else ""), level=LogLevel.ERROR if message else LogLevel.INFO)
    if evaluation.webhook_url:
        dispatch.send_webhook(evaluation_id)
    return status


def _max_error_fraction(evaluation: Evaluation) -> float:
    """An agent run's config says 1.0: its endpoint's errors are the agent's outcome, not the platform's."""
    return evaluation.config.get("maxErrorFraction", settings.RLMESH_MAX_ERROR_FRACTION)


def fail_lost_shard(shard: Shard, reason: str) -> bool:
    """A running shard whose worker was lost for the last allowed time fails (``reason`` says how); its evaluation is
    finalized. Conditional on the claim the reaper saw, so a shard that moved on meanwhile is left alone."""
    done = Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).update(
        status=ShardStatus.FAILED, finished_at=timezone.now(), error=reason
    )
    if done:
        log(shard.evaluation, f"shard {shard.index} of workload {shard.workload.index} failed: {reason}",
            level=LogLevel.ERROR, shard=shard)
        finalize_evaluation(shard.evaluation_id)
    return bool(done)


def requeue_lost_shard(shard: Shard, reason: str, *, reset_attempts: bool = False) -> bool:
    """Put a running shard whose worker was lost back in the queue and send it again (on commit); it resumes where it
    stopped. ``reset_attempts`` starts its attempt count over (it made progress). Conditional on the claim the
    reaper saw."""
    with transaction.atomic():
        done = Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).update(
            status=ShardStatus.QUEUED, claimed_by="", queued_at=timezone.now(),
            **({"attempts": 0} if reset_attempts else {}),
        )
        if done:
            log(shard.evaluation, f"shard {shard.index} of workload {shard.workload.index}: worker {shard.claimed_by} "
                f"{reason}; re-queued", level=LogLevel.WARNING, shard=shard)
            dispatch.send_shards([shard.pk])
    return bool(done)


def fail_stalled_evaluation(evaluation: Evaluation, reason: str) -> bool:
    """End an active evaluation that stopped making progress: queued shards are cancelled, running ones failed (their
    worker stops at the next episode), the evaluation fails with ``reason``. Conditional on its status."""
    now = timezone.now()
    with transaction.atomic():
        Shard.objects.filter(evaluation=evaluation, status=ShardStatus.QUEUED).update(status=ShardStatus.CANCELLED, finished_at=now)
        Shard.objects.filter(evaluation=evaluation, status=ShardStatus.RUNNING).update(
            status=ShardStatus.FAILED, finished_at=now, error=reason)
        done = Evaluation.objects.filter(pk=evaluation.pk, status=evaluation.status).update(
            status=EvaluationStatus.FAILED, error_message=reason, finished_at=now, updated_at=now)
        if done:
            log(evaluation, f"failed: {reason}", level=LogLevel.ERROR)
    return bool(done)


def log(evaluation: Evaluation, message: str, *, level: str = LogLevel.INFO, source: str = "platform", shard: Shard | None = None) -> None:
    """Append a line to the evaluation's log (shown under Logs) and to the process log."""
    message = nul_free(message)  # server output may hold NULs; PostgreSQL text cannot
    EvaluationLog.objects.create(evaluation=evaluation, shard=shard, level=level, source=source, message=message)
    logger.log({"info": logging.INFO, "warning": logging.WARNING}.get(level, logging.ERROR), "%s: %s", evaluation.public_id, message)


@survives_restarts
def heartbeat(shard: Shard) -> None:
    """Mark a running shard alive now (the reaper leaves it alone for another heartbeat timeout)."""
    Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING).update(heartbeat_at=timezone.now())


@survives_restarts
def is_stopping(evaluation_id: int) -> bool:
    """Whether the evaluation is being cancelled (or was), checked by the shard loop between episodes."""
    status = Evaluation.objects.filter(pk=evaluation_id).values_list("status", flat=True).first()
    return status in (EvaluationStatus.CANCELLING, EvaluationStatus.CANCELLED)


@survives_restarts
def still_claimed(shard: Shard) -> bool:
    """Whether this process still holds the shard (the reaper may have given it to another worker while this one
    was stopped or cut off); checked by the shard loop between episodes."""
    return Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).exists()


@survives_restarts
def add_warnings(evaluation: Evaluation, warnings: list[str]) -> list[str]:
    """Append ``warnings`` to the evaluation's (``GET /v1/evaluations/{id}`` ``warnings``, the dashboard) once each,
    whatever shards add them at once; the ones that were new."""
    with transaction.atomic():
        current = list(Evaluation.objects.select_for_update().filter(pk=evaluation.pk)
                       .values_list("warnings", flat=True).first() or [])
        new = [w for w in dict.fromkeys(warnings) if w not in current]
        if new:
            Evaluation.objects.filter(pk=evaluation.pk).update(warnings=current + new)
    return new


@survives_restarts
def end_shard(shard: Shard, status: str, error: str = "") -> bool:
    """Move the shard from ``running`` to its final ``status``, only if this process still holds it (a shard the
    reaper gave to another worker is not overwritten); True if it did."""
    return bool(Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).update(
        status=status, finished_at=timezone.now(), error=error
    ))
