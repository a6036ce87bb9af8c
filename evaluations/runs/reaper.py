"""The periodic reaper (every ``RLMESH_REAP_INTERVAL`` seconds via beat, and at each worker's start): it finds the
shards whose worker is gone, the queued shards whose message was lost, and the evaluations that stopped making
progress, and hands each to :mod:`evaluations.runs.lifecycle` to move.

Dead workers are found on any host from their liveness records (:mod:`evaluations.runs.workers`): a process silent
for ``RLMESH_WORKER_LIVENESS_TIMEOUT`` is dead, so a killed worker's shards run again within about that plus one reap
interval. A shard whose own heartbeat is older than ``RLMESH_SHARD_HEARTBEAT_TIMEOUT`` is taken too (a process that
is alive but whose shard loop hung).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.utils import timezone

from ..choices import ShardStatus
from ..models import Episode, Evaluation, Shard, WorkerProcess
from .. import dispatch
from .lifecycle import fail_lost_shard, fail_stalled_evaluation, requeue_lost_shard
from ..runtime.processes import pid_alive
from .workers import live_identities

__all__ = ["reap_shards", "resend_lost_messages", "stalled_evaluations", "worker_lost"]

logger = logging.getLogger(__name__)


def _ago(seconds: float):
    return timezone.now() - timezone.timedelta(seconds=seconds)


def _pid_gone(identity: str) -> bool:
    """Whether ``host:pid`` names a process of this host that no longer exists (known at once, without waiting for
    its liveness record to go stale)."""
    host, _, pid = identity.rpartition(":")
    return host == settings.RLMESH_HOSTNAME and pid.isdigit() and not pid_alive(int(pid))


def worker_lost(identity: str, live: set[str]) -> str | None:
    """Why the worker process ``host:pid`` counts as lost (its pid gone from this host, or no liveness record in
    ``live``), or None while it is alive."""
    if _pid_gone(identity):
        return "exited (its process is gone from this host)"
    if identity not in live:
        return "stopped answering (no liveness record within the timeout)"
    return None


def _lost_reason(shard: Shard, live: set[str], stale_before) -> str | None:
    """Why a running shard's worker counts as lost, or None while it is fine."""
    if reason := worker_lost(shard.claimed_by, live):
        return reason
    if shard.heartbeat_at is None or shard.heartbeat_at < stale_before:
        return "stopped updating the shard's heartbeat"
    return None


def resend_lost_messages() -> list[int]:
    """Send queued shards again when their message was probably lost: some live worker process has been idle for
    ``RLMESH_IDLE_RESEND_SECONDS`` while they waited at least as long (a healthy queue keeps idle workers busy; a
    submit during a broker outage, or messages dropped by a broker restart, does not). ``queued_at`` moves, so a
    shard is sent at most once per period; the idempotent claim makes a duplicate harmless. Returns the ids sent."""
    wait = settings.RLMESH_IDLE_RESEND_SECONDS
    idle = WorkerProcess.objects.filter(last_seen__gte=_ago(settings.RLMESH_WORKER_LIVENESS_TIMEOUT),
                                        busy_since__isnull=True, idle_since__lte=_ago(wait))
    if not idle.exists():
        return []
    resent = []
    for shard in Shard.objects.filter(status=ShardStatus.QUEUED, queued_at__lte=_ago(wait)).order_by("queued_at"):
        if Shard.objects.filter(pk=shard.pk, status=ShardStatus.QUEUED, queued_at=shard.queued_at).update(queued_at=timezone.now()):
            resent.append(shard.pk)
    if resent:
        logger.warning("re-sending %d queued shards whose message was lost (idle workers waited %.0f s)", len(resent), wait)
    dispatch.send_shards(resent, on_commit=False)  # each UPDATE above committed on its own
    return resent


def stalled_evaluations() -> list[str]:
    """Fail running evaluations that recorded nothing for ``RLMESH_EVALUATION_STALL_SECONDS`` (the watchdog); return
    their public ids. Their progress counters bump ``updated_at`` with every episode."""
    limit = settings.RLMESH_EVALUATION_STALL_SECONDS
    failed = []
    for evaluation in Evaluation.objects.filter(status="running", updated_at__lt=_ago(limit)):
        reason = f"no progress for {limit:g} s (no episode recorded; RLMESH_EVALUATION_STALL_SECONDS)"
        if fail_stalled_evaluation(evaluation, reason):
            failed.append(evaluation.public_id)
    return failed


def _progressed(shard: Shard) -> bool:
    """Whether the shard recorded an episode during its last attempt: a shard whose workers keep dying while it makes
    progress (hosts lost one after another) is not a shard that kills its workers, so its attempts start over."""
    return Episode.objects.filter(shard=shard, finished_at__gte=shard.started_at).exists() if shard.started_at else False


def reap_shards() -> list[int]:
    """Re-queue running shards whose worker was lost (or fail them once ``RLMESH_SHARD_MAX_ATTEMPTS`` attempts in a row
    recorded nothing), send
    again queued shards whose message was lost, and fail stalled evaluations; return the shard ids sent."""
    live = live_identities()
    stale_before = _ago(settings.RLMESH_SHARD_HEARTBEAT_TIMEOUT)
    sent = resend_lost_messages()
    for shard in Shard.objects.filter(status=ShardStatus.RUNNING).select_related("evaluation", "workload"):
        reason = _lost_reason(shard, live, stale_before)
        if reason is None:
            continue
        progressed = _progressed(shard)
        if shard.attempts >= settings.RLMESH_SHARD_MAX_ATTEMPTS and not progressed:
            fail_lost_shard(shard, f"its worker was lost {shard.attempts} times without recording an episode "
                            f"(last: {shard.claimed_by} {reason})")
        elif requeue_lost_shard(shard, reason, reset_attempts=progressed):
            sent.append(shard.pk)
    stalled_evaluations()
    return sent
