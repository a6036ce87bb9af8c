"""Celery tasks: thin, named, idempotent, taking ids."""

from __future__ import annotations

import ctypes
import signal

from celery import shared_task
from celery.signals import worker_process_init, worker_ready


@shared_task(name="evaluations.run_shard", ignore_result=True, acks_late=True)
def run_shard(shard_id: int) -> None:
    """Run one shard (see services.execution.run_shard); a duplicate delivery does nothing."""
    from .services.execution import run_shard as _run

    _run(shard_id)


@shared_task(name="evaluations.reap_shards", ignore_result=True)
def reap_shards() -> None:
    """Re-queue shards whose worker died (see services.evaluations.reap_shards)."""
    from .services.evaluations import reap_containers, reap_shards as _reap

    _reap()
    reap_containers()


@shared_task(name="evaluations.probe_image", ignore_result=True, acks_late=True)
def probe_image(version_id: int) -> None:
    """Probe a pushed image version (see services.probes.probe_version)."""
    from .services.probes import probe_version

    probe_version(version_id)


@worker_ready.connect
def _reap_on_start(sender=None, **kwargs) -> None:
    # A worker that starts after a crash recovers the crashed worker's shards at once instead of
    # waiting for the next periodic run.
    reap_shards.delay()


@worker_process_init.connect
def _die_with_worker(**kwargs) -> None:
    # Pool processes (and through PDEATHSIG, the servers they start) end when the worker is killed,
    # so a SIGKILLed worker leaves no episode loop running behind the reaper's back.
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    except OSError:
        pass
