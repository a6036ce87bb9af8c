"""Writes on evaluations shared by the API, the dashboard and the workers."""

from __future__ import annotations

import logging
import os
import socket

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from ..choices import EpisodeStatus, EvaluationStatus, LogLevel, ShardStatus
from ..models import ApiKey, Episode, Evaluation, EvaluationLog, Organization, Shard, Workload
from .planning import Plan

__all__ = [
    "CancelRefused",
    "cancel_evaluation",
    "claim_shard",
    "create_evaluation",
    "finalize_evaluation",
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
            organization=organization,
            creator=creator,
            api_key=api_key,
            name=plan.name,
            request_raw=raw_body,
            request=plan.data,
            config=plan.config,
            tags=plan.tags,
            metadata=plan.metadata,
            warnings=plan.warnings,
            timeout_seconds=plan.timeout_seconds,
            total_episodes=plan.total_episodes,
        )
        shard_ids: list[int] = []
        for index, pw in enumerate(plan.workloads):
            workload = Workload.objects.create(
                evaluation=evaluation,
                index=index,
                model_ref=pw.model.reference,
                model_version=pw.model.version,
                model_checkpoint=pw.model.checkpoint or "",
                env_ref=pw.env.reference,
                env_version=pw.env.version,
                task_id=pw.task_id,
                benchmark=pw.benchmark,
                scenario=pw.scenario,
                perturbation=pw.perturbation,
                record=pw.record,
                episodes=pw.episodes,
                seed=pw.seed,
                workers=pw.workers,
                max_steps=pw.max_steps,
                env_vars=pw.env_vars,
                env_kwargs=pw.env_kwargs,
                model_kwargs=pw.model.load_kwargs,
                success_criterion=pw.success_criterion,
                metadata=pw.metadata,
            )
            shards = Shard.objects.bulk_create(
                Shard(evaluation=evaluation, workload=workload, index=i, start=start, stop=stop)
                for i, (start, stop) in enumerate(pw.shards)
            )
            shard_ids.extend(s.pk for s in shards)
        log(evaluation, f"submitted: {len(plan.workloads)} workloads, {len(shard_ids)} shards, {plan.total_episodes} episodes")
        # robust: a broker outage must not turn a committed submit into a 500; the reaper re-enqueues
        # shards left queued too long.
        transaction.on_commit(lambda: enqueue_shards(shard_ids), robust=True)
    return evaluation


def enqueue_shards(shard_ids: list[int]) -> None:
    """Send one ``run_shard`` message per shard id (call after the shards are committed)."""
    from ..tasks import run_shard

    for shard_id in shard_ids:
        run_shard.delay(shard_id)


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
    except IntegrityError:
        return False
    return True


def finalize_evaluation(evaluation_id: int) -> str | None:
    """End the evaluation if none of its shards is queued or running; return the final status, else None.

    ``cancelling`` → ``cancelled``; past its deadline → ``failed``; more errored episodes than
    ``RLMESH_MAX_ERROR_FRACTION`` of the total → ``failed`` with the first error; else ``completed``.
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
        elif n_errors > settings.RLMESH_MAX_ERROR_FRACTION * evaluation.total_episodes:
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
    return status


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_shards() -> list[int]:
    """Re-queue running shards whose worker died; return the ids re-queued.

    A shard is presumed dead when its heartbeat is older than ``RLMESH_SHARD_HEARTBEAT_TIMEOUT``, or at
    once when it was claimed on this host by a process that no longer exists. A shard that has used up
    ``RLMESH_SHARD_MAX_ATTEMPTS`` fails instead, and its evaluation is finalized. Re-queued shards resume
    where they stopped: episodes already recorded are skipped.
    """
    from ..tasks import run_shard

    host = socket.gethostname()
    stale_before = timezone.now() - timezone.timedelta(seconds=settings.RLMESH_SHARD_HEARTBEAT_TIMEOUT)
    requeued: list[int] = []
    # Shards queued for longer than the timeout may have lost their message (broker outage at submit):
    # send another; the idempotent claim makes a duplicate harmless, and queued_at moves so each shard
    # gets at most one extra message per timeout period.
    for shard in Shard.objects.filter(status=ShardStatus.QUEUED, queued_at__lt=stale_before):
        if Shard.objects.filter(pk=shard.pk, status=ShardStatus.QUEUED, queued_at=shard.queued_at).update(queued_at=timezone.now()):
            run_shard.delay(shard.pk)
            requeued.append(shard.pk)
    for shard in Shard.objects.filter(status=ShardStatus.RUNNING).select_related("evaluation", "workload"):
        owner_host, _, pid = shard.claimed_by.rpartition(":")
        dead = shard.heartbeat_at is None or shard.heartbeat_at < stale_before
        if not dead and owner_host == host and pid.isdigit():
            dead = not _pid_alive(int(pid))
        if not dead:
            continue
        if shard.attempts >= settings.RLMESH_SHARD_MAX_ATTEMPTS:
            done = Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).update(
                status=ShardStatus.FAILED, finished_at=timezone.now(), error=f"worker lost {shard.attempts} times"
            )
            if done:
                log(shard.evaluation, f"shard {shard.index} of workload {shard.workload.index} failed: its worker was lost {shard.attempts} times", level=LogLevel.ERROR, shard=shard)
                finalize_evaluation(shard.evaluation_id)
            continue
        with transaction.atomic():
            done = Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).update(
                status=ShardStatus.QUEUED, claimed_by="", queued_at=timezone.now()
            )
            if done:
                log(shard.evaluation, f"shard {shard.index} of workload {shard.workload.index}: worker {shard.claimed_by} was lost; re-queued", level=LogLevel.WARNING, shard=shard)
                run_shard.delay_on_commit(shard.pk)
                requeued.append(shard.pk)
    return requeued


def log(evaluation: Evaluation, message: str, *, level: str = LogLevel.INFO, source: str = "platform", shard: Shard | None = None) -> None:
    """Append a line to the evaluation's log (shown under Logs) and to the process log."""
    EvaluationLog.objects.create(evaluation=evaluation, shard=shard, level=level, source=source, message=message)
    logger.log({"info": logging.INFO, "warning": logging.WARNING}.get(level, logging.ERROR), "%s: %s", evaluation.public_id, message)


def heartbeat(shard: Shard) -> None:
    Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING).update(heartbeat_at=timezone.now())


def active_filter() -> Q:
    return Q(status__in=[EvaluationStatus.QUEUED, EvaluationStatus.RUNNING, EvaluationStatus.CANCELLING])


def reap_containers() -> list[str]:
    """Remove platform containers whose shard or probe is no longer running; [] when no Docker API is configured.

    Shard containers are named after their shard (``<eval>-w<i>-s<j>-env|model``), probe containers
    ``probe-<version id>``; anything else with the platform label is an orphan of a dead worker.
    """
    from pathlib import Path

    from ..models import ImageVersion

    host = settings.RLMESH_DOCKER_HOST
    if host.startswith("unix://") and not Path(host.removeprefix("unix://")).exists():
        return []
    from ..runtime.docker import reap_orphans

    live = set()
    for shard in Shard.objects.filter(status=ShardStatus.RUNNING).select_related("evaluation", "workload"):
        base = f"{shard.evaluation.public_id}-w{shard.workload.index}-s{shard.index}"
        live |= {f"{base}-env", f"{base}-model"}
    live |= {f"probe-{pk}" for pk in ImageVersion.objects.filter(probe_status="probing").values_list("pk", flat=True)}
    try:
        return reap_orphans(live)
    except Exception:  # noqa: BLE001 - an unreachable engine must not break the periodic reaper
        logger.warning("container reaper could not reach the Docker API at %s", host)
        return []
