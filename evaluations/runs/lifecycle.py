"""Every status change of an evaluation and its shards, in one place.

Submit (``create_evaluation``) → claim a shard (``claim_shard``) → record its episodes (``record_episode``) and keep
its heartbeat (``heartbeat``) → end it (``end_shard``) → finalize the evaluation when its last shard ended
(``finalize_evaluation``); ``cancel_evaluation`` and the reaper (``reap_shards``) move the same rows. Each change
is a conditional UPDATE, so concurrent workers, re-delivered messages and the reaper never double-count or
overwrite a finished row. Messages are sent only through :mod:`evaluations.runs.dispatch`.
"""

from __future__ import annotations

import logging
import os
import socket

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from ..choices import EpisodeStatus, EvaluationStatus, LogLevel, ShardStatus
from ..models import ApiKey, Episode, Evaluation, EvaluationLog, Organization, Shard, Workload
from ..domain.text import nul_free
from ..planning import Plan
from . import dispatch

__all__ = [
    "CancelRefused",
    "cancel_evaluation",
    "claim_shard",
    "create_evaluation",
    "end_shard",
    "finalize_evaluation",
    "heartbeat",
    "is_stopping",
    "log",
    "reap_shards",
    "record_episode",
    "worker_identity",
]

logger = logging.getLogger(__name__)


def create_evaluation(*, plan: Plan, raw_body: str, organization: Organization, creator=None, api_key: ApiKey | None = None) -> Evaluation:
    """Write the evaluation, its workloads and shards in one transaction; enqueue every shard on commit.

    Returns the new Evaluation (status ``queued``). Nothing is written if any insert fails.
    """
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            organization=organization, creator=creator, api_key=api_key, request_raw=raw_body, **plan.evaluation_fields()
        )
        shard_ids: list[int] = []
        for index, planned in enumerate(plan.workloads):
            workload = Workload.objects.create(evaluation=evaluation, index=index, **planned.row_fields())
            shards = Shard.objects.bulk_create(
                Shard(evaluation=evaluation, workload=workload, index=i, start=start, stop=stop)
                for i, (start, stop) in enumerate(planned.task.shards)
            )
            shard_ids.extend(s.pk for s in shards)
        log(evaluation, f"submitted: {len(plan.workloads)} workloads, {len(shard_ids)} shards, {plan.total_episodes} episodes")
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


def worker_identity() -> str:
    """``host:pid`` of this process, recorded on the shards it claims."""
    return f"{socket.gethostname()}:{os.getpid()}"


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
            if fields.get("video"):
                Organization.objects.get(evaluations__pk=shard.evaluation_id).add_storage(fields["video_meta"].get("bytes", 0))
    except IntegrityError:
        return False
    return True


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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _worker_lost(shard: Shard, *, host: str, stale_before) -> bool:
    """A running shard's worker is presumed lost when its heartbeat is stale, or at once when it was claimed on this
    host by a process that no longer exists."""
    if shard.heartbeat_at is None or shard.heartbeat_at < stale_before:
        return True
    owner_host, _, pid = shard.claimed_by.rpartition(":")
    return owner_host == host and pid.isdigit() and not _pid_alive(int(pid))


def _resend_stale_queued(stale_before) -> list[int]:
    """Shards queued for longer than the heartbeat timeout may have lost their message (a broker outage at submit):
    send another. The idempotent claim makes a duplicate harmless, and ``queued_at`` moves so each shard gets at
    most one extra message per timeout period."""
    resent = []
    for shard in Shard.objects.filter(status=ShardStatus.QUEUED, queued_at__lt=stale_before):
        if Shard.objects.filter(pk=shard.pk, status=ShardStatus.QUEUED, queued_at=shard.queued_at).update(queued_at=timezone.now()):
            resent.append(shard.pk)
    dispatch.send_shards(resent, on_commit=False)  # each UPDATE above committed on its own
    return resent


def _fail_lost_shard(shard: Shard) -> None:
    done = Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).update(
        status=ShardStatus.FAILED, finished_at=timezone.now(), error=f"worker lost {shard.attempts} times"
    )
    if done:
        log(shard.evaluation, f"shard {shard.index} of workload {shard.workload.index} failed: its worker was lost "
            f"{shard.attempts} times", level=LogLevel.ERROR, shard=shard)
        finalize_evaluation(shard.evaluation_id)


def _requeue_lost_shard(shard: Shard) -> bool:
    with transaction.atomic():
        done = Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).update(
            status=ShardStatus.QUEUED, claimed_by="", queued_at=timezone.now()
        )
        if done:
            log(shard.evaluation, f"shard {shard.index} of workload {shard.workload.index}: worker {shard.claimed_by} "
                "was lost; re-queued", level=LogLevel.WARNING, shard=shard)
            dispatch.send_shards([shard.pk])
    return bool(done)


def reap_shards() -> list[int]:
    """Re-queue running shards whose worker died, and send queued shards again whose message may be lost; return the
    ids sent.

    A shard is presumed dead when its heartbeat is older than ``RLMESH_SHARD_HEARTBEAT_TIMEOUT``, or at once when it
    was claimed on this host by a process that no longer exists. A shard that has used up
    ``RLMESH_SHARD_MAX_ATTEMPTS`` fails instead, and its evaluation is finalized. Re-queued shards resume where they
    stopped: episodes already recorded are skipped.
    """
    host = socket.gethostname()
    stale_before = timezone.now() - timezone.timedelta(seconds=settings.RLMESH_SHARD_HEARTBEAT_TIMEOUT)
    sent = _resend_stale_queued(stale_before)
    for shard in Shard.objects.filter(status=ShardStatus.RUNNING).select_related("evaluation", "workload"):
        if not _worker_lost(shard, host=host, stale_before=stale_before):
            continue
        if shard.attempts >= settings.RLMESH_SHARD_MAX_ATTEMPTS:
            _fail_lost_shard(shard)
        elif _requeue_lost_shard(shard):
            sent.append(shard.pk)
    return sent


def log(evaluation: Evaluation, message: str, *, level: str = LogLevel.INFO, source: str = "platform", shard: Shard | None = None) -> None:
    """Append a line to the evaluation's log (shown under Logs) and to the process log."""
    message = nul_free(message)  # server output may hold NULs; PostgreSQL text cannot
    EvaluationLog.objects.create(evaluation=evaluation, shard=shard, level=level, source=source, message=message)
    logger.log({"info": logging.INFO, "warning": logging.WARNING}.get(level, logging.ERROR), "%s: %s", evaluation.public_id, message)


def heartbeat(shard: Shard) -> None:
    """Mark a running shard alive now (the reaper leaves it alone for another heartbeat timeout)."""
    Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING).update(heartbeat_at=timezone.now())


def is_stopping(evaluation_id: int) -> bool:
    """Whether the evaluation is being cancelled (or was), checked by the shard loop between episodes."""
    status = Evaluation.objects.filter(pk=evaluation_id).values_list("status", flat=True).first()
    return status in (EvaluationStatus.CANCELLING, EvaluationStatus.CANCELLED)


def end_shard(shard: Shard, status: str, error: str = "") -> bool:
    """Move the shard from ``running`` to its final ``status``, only if this process still holds it (a shard the
    reaper gave to another worker is not overwritten); True if it did."""
    return bool(Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).update(
        status=status, finished_at=timezone.now(), error=error
    ))
