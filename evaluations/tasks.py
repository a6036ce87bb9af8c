"""Celery tasks: thin, named, idempotent, taking ids; each declares its queue.

Messages are sent only by :mod:`evaluations.dispatch`, which finds these tasks by name. Workers consume
``-Q shards,maintenance``.
"""

from __future__ import annotations

import ctypes
import os
import signal

from celery import shared_task
from celery.signals import beat_embedded_init, worker_process_init, worker_ready

from . import dispatch

#: Long-running episode loops.
SHARDS_QUEUE = "shards"
#: Housekeeping, probes, webhooks and dataset exports: the reaper, image probes, run webhooks, LeRobot datasets.
MAINTENANCE_QUEUE = "maintenance"


@shared_task(name=dispatch.RUN_SHARD, queue=SHARDS_QUEUE, ignore_result=True, acks_late=True)
def run_shard(shard_id: int) -> None:
    """Run one shard (see runs.loop.run_shard); a duplicate delivery does nothing."""
    from .runs.loop import run_shard as run

    run(shard_id)


@shared_task(name=dispatch.REAP_SHARDS, queue=MAINTENANCE_QUEUE, ignore_result=True)
def reap_shards() -> None:
    """Re-queue shards whose worker died, remove orphaned containers, and fail dataset exports whose worker died
    (runs.reaper, runtime.reaper, datasets.exports)."""
    from .datasets.exports import reap_lost_exports
    from .runs.reaper import reap_shards as reap
    from .runtime.reaper import reap_containers

    reap()
    reap_containers()
    reap_lost_exports()


@shared_task(name=dispatch.PROBE_IMAGE, queue=MAINTENANCE_QUEUE, ignore_result=True, acks_late=True)
def probe_image(version_id: int) -> None:
    """Probe a pushed image version (see services.probes.probe_version)."""
    from .services.probes import probe_version

    probe_version(version_id)


@shared_task(name=dispatch.BUILD_CHECKPOINT_UPLOAD, queue=MAINTENANCE_QUEUE, ignore_result=True, acks_late=True)
def build_checkpoint_upload(upload_id: int) -> None:
    """Build a LeRobot checkpoint uploaded from the dashboard into a model-car image and push it (see
    services.model_cars.build_upload); a duplicate delivery does nothing."""
    from .services.model_cars import build_upload

    build_upload(upload_id)


@shared_task(name=dispatch.DELIVER_WEBHOOK, queue=MAINTENANCE_QUEUE, ignore_result=True, acks_late=True)
def deliver_webhook(evaluation_id: int, attempt: int = 1) -> None:
    """POST an ended evaluation's signed status document to its webhook (see webhooks.deliver); retries are sent
    by the delivery itself, with backoff, through evaluations.dispatch."""
    from .webhooks import deliver

    deliver(evaluation_id, attempt)


@shared_task(name=dispatch.BUILD_DATASET_EXPORT, queue=MAINTENANCE_QUEUE, ignore_result=True, acks_late=True)
def build_dataset_export(export_id: int) -> None:
    """Build a queued dataset export (see datasets.exports.build_export); a duplicate delivery does nothing."""
    from .datasets.exports import build_export

    build_export(export_id)


@worker_ready.connect
def _reap_on_start(sender=None, **kwargs) -> None:
    # A worker that starts after a crash recovers the crashed worker's shards at once instead of
    # waiting for the next periodic run.
    dispatch.request_reap()


@beat_embedded_init.connect
def _embedded_beat_dies_with_worker(sender=None, **kwargs) -> None:
    # `celery worker -B` (make demo) runs beat in a child of the worker's main process. When that process is
    # SIGKILLed the child used to live on, orphaned, sending the reaper's schedule to no one (found by a kill -9
    # of the demo's worker). SIGTERM lets it close its schedule file; a standalone `celery beat` is not embedded.
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)
    except OSError:
        return
    if os.getppid() == 1:  # the worker died before this ran
        os.kill(os.getpid(), signal.SIGTERM)


@worker_process_init.connect
def _die_with_worker(**kwargs) -> None:
    # Pool processes (and through PDEATHSIG, the servers they start) end when the worker is killed,
    # so a SIGKILLed worker leaves no episode loop running behind the reaper's back.
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    except OSError:
        pass
    # Announce this process alive (and keep announcing) so a reaper on any host notices at once when it dies.
    from .runs.workers import LivenessThread
    from .runtime import forkserver

    LivenessThread().start()
    forkserver.warm_up()  # the first shard's servers start in ~30 ms too
    from .runs import loop  # noqa: F401  (imported now, not on the first shard: rlmesh, numpy, the engine)
