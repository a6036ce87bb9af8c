"""The shard loop: claim a shard, run its remaining episodes one at a time, record each, end it, finalize.

Called by the ``evaluations.run_shard`` Celery task with a shard id. Idempotent: a shard that is not ``queued`` is
left alone, and episodes already recorded are skipped, so a re-delivered or re-queued shard neither duplicates nor
loses an episode. Cancellation and the evaluation's deadline are checked between episodes; cancellation also once
the servers are ready, before each episode starts (a server start can take a minute).
"""

from __future__ import annotations

import logging
import threading

from django.core.files.storage import default_storage
from django.db import connection
from django.utils import timezone

from ..choices import LogLevel, ShardStatus
from ..models import Episode, Shard
from . import workers
from .lifecycle import (
    claim_shard, end_shard, finalize_evaluation, heartbeat, is_stopping, log, record_episode, still_claimed,
)
from .conventions import check_first_actions
from .outcome import error_fields
from .runner import ShardRunner

__all__ = ["run_shard"]

logger = logging.getLogger(__name__)

#: After this many consecutive failed server starts, the shard's remaining episodes are recorded as errors.
MAX_START_FAILURES = 2
#: How many times one episode runs again after breaking for a reason outside its env and model (EpisodeOutcome.rerun).
MAX_EPISODE_RERUNS = 2
HEARTBEAT_SECONDS = 10.0


class _Heartbeat(threading.Thread):
    """Keeps the shard's heartbeat fresh during long episodes so the reaper does not take it."""

    def __init__(self, shard: Shard):
        super().__init__(daemon=True)
        self.shard = shard
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(HEARTBEAT_SECONDS):
                heartbeat(self.shard)
        finally:
            connection.close()


def _remaining(shard: Shard) -> tuple[list[int], int]:
    """The episode indices of the shard not recorded yet, and how many are."""
    done = set(Episode.objects.filter(
        workload_id=shard.workload_id, index__gte=shard.start, index__lt=shard.stop).values_list("index", flat=True))
    return [i for i in range(shard.start, shard.stop) if i not in done], len(done)


def _wall_cap(runner: ShardRunner) -> float | None:
    """Seconds the next episode may take: the episode timeout, shortened by the evaluation's deadline; None when the
    deadline has passed."""
    deadline = runner.evaluation.deadline
    if deadline is None:
        return runner.episode_timeout
    remaining = (deadline - timezone.now()).total_seconds()
    return min(runner.episode_timeout, remaining) if remaining > 0 else None


#: What ``_run_episodes`` returns when the reaper gave the shard to another worker meanwhile.
LOST = "lost"


def _run_episodes(shard: Shard, runner: ShardRunner, todo: list[int]) -> tuple[str, str]:
    """Run and record each episode of ``todo``; return the shard's final ``(status, error)``, or ``(LOST, "")`` when
    this process no longer holds the shard (it was stopped or cut off long enough for the reaper to re-queue it)."""
    evaluation = shard.evaluation
    reruns: dict[int, int] = {}
    queue = list(todo)
    checked = False
    while queue:
        index = queue.pop(0)
        if not still_claimed(shard):
            return LOST, ""
        if is_stopping(evaluation.pk):
            return ShardStatus.CANCELLED, ""
        wall_cap = _wall_cap(runner)
        if wall_cap is None:
            return ShardStatus.FAILED, "evaluation timed out"
        if runner.start_failures >= MAX_START_FAILURES:
            record_episode(shard=shard, index=index, **runner.not_run(index))
            continue
        if not runner.admit(lambda: not still_claimed(shard) or is_stopping(evaluation.pk) or _wall_cap(runner) is None):
            queue.insert(0, index)  # stopped while waiting for host memory: the checks above say why
            continue
        if not checked:  # the model's first actions, before an episode counts (runs.conventions)
            checked = True
            findings = check_first_actions(runner, [index, *queue])
            if findings is not None and findings.errors:
                return _not_run(shard, runner, [index, *queue], findings.errors[0])
        outcome = runner.run_episode(index, wall_cap=wall_cap, stop=lambda: is_stopping(evaluation.pk))
        if outcome is None:  # cancelled while its servers started: the episode did not begin
            return ShardStatus.CANCELLED, ""
        if outcome.rerun and reruns.get(index, 0) < MAX_EPISODE_RERUNS:
            reruns[index] = reruns.get(index, 0) + 1
            log(evaluation, f"episode {index} (seed {outcome.fields['seed']}) runs again: {outcome.rerun}",
                level=LogLevel.WARNING, shard=shard)
            runner.close()
            queue.insert(0, index)
            continue
        if not record_episode(shard=shard, index=index, **outcome.fields):
            for media in ("video", "steps_file"):  # recorded by an earlier delivery: drop the copies
                if outcome.fields.get(media):
                    default_storage.delete(outcome.fields[media])
        if outcome.restart:
            if outcome.fields.get("error"):
                log(evaluation, f"episode {index} (seed {outcome.fields['seed']}): {outcome.fields['error']}",
                    level=LogLevel.ERROR, shard=shard)
            runner.close()
    return ShardStatus.COMPLETED, ""


def _not_run(shard: Shard, runner: ShardRunner, indices: list[int], error: str) -> tuple[str, str]:
    """Record each of ``indices`` as not run (no verdict: counted by its reason, in no rate) for ``error``, a finding
    of the first-action check; the shard's final ``(status, error)``."""
    for index in indices:
        record_episode(shard=shard, index=index, **error_fields(
            {"seed": runner.workload.seed_for(index)}, f"not run: the first-action check failed: {error}"))
    return ShardStatus.FAILED, f"the first-action check failed: {error}"


def run_shard(shard_id: int) -> str | None:
    """Run the shard if it is still queued; return its final status, or None if it was not claimed."""
    shard = claim_shard(shard_id)
    if shard is None:
        return None
    evaluation = shard.evaluation
    if is_stopping(evaluation.pk):
        end_shard(shard, ShardStatus.CANCELLED)
        finalize_evaluation(evaluation.pk)
        return ShardStatus.CANCELLED
    todo, done = _remaining(shard)
    # A re-run says so: attempts count claims since the shard last made progress, ``done`` what earlier runs kept.
    resumed = [f"attempt {shard.attempts}"] if shard.attempts > 1 else []
    resumed += [f"resumed: {done} episodes already recorded"] if done else []
    attempt = f" ({', '.join(resumed)})" if resumed else ""
    log(evaluation, f"shard {shard.index} of {shard.workload.model_ref} × {shard.workload.task_id}: episodes "
        f"[{shard.start}, {shard.stop}) started on {shard.claimed_by}{attempt}", shard=shard)
    runner = ShardRunner(shard)
    beat = _Heartbeat(shard)
    beat.start()
    workers.mark(busy=True)
    try:
        status, error = _run_episodes(shard, runner, todo)
    except Exception as exc:  # noqa: BLE001 - a bug here must still end the shard and free its servers
        logger.exception("shard %s crashed", shard.pk)
        status, error = ShardStatus.FAILED, f"{type(exc).__name__}: {exc}"
        log(evaluation, f"shard {shard.index} crashed: {error}", level=LogLevel.ERROR, shard=shard)
    finally:
        beat.stopped.set()
        runner.close()
        workers.mark(busy=False)
    if status == LOST:
        # Another worker holds it now: its episodes so far are kept, and the new owner ends the shard.
        log(evaluation, f"shard {shard.index}: {shard.claimed_by} lost its claim (re-queued while it was unreachable); "
            "it stops and leaves the shard to its new worker", level=LogLevel.WARNING, shard=shard)
        return None
    end_shard(shard, status, error)
    finalize_evaluation(evaluation.pk)
    return status
