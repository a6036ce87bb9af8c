"""The only place that sends Celery messages.

Tasks are looked up by name in the Celery app's registry (``evaluations.tasks`` declares them, with their queues),
so nothing here imports the task module and the task module may import everything else. Every sender that runs
inside a transaction sends on commit: a worker must never receive an id whose row it cannot read yet.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from celery import current_app
from django.db import transaction

__all__ = ["BUILD_CHECKPOINT_UPLOAD", "BUILD_DATASET_EXPORT", "DELIVER_WEBHOOK", "RUN_SHARD", "PROBE_IMAGE", "REAP_SHARDS", "request_reap",
           "send_checkpoint_upload", "send_dataset_export", "send_probe", "send_shards", "send_webhook"]

logger = logging.getLogger(__name__)

#: Task names (see evaluations/tasks.py, which declares each with its queue).
RUN_SHARD = "evaluations.run_shard"
PROBE_IMAGE = "evaluations.probe_image"
REAP_SHARDS = "evaluations.reap_shards"
DELIVER_WEBHOOK = "evaluations.deliver_webhook"
BUILD_DATASET_EXPORT = "evaluations.build_dataset_export"
BUILD_CHECKPOINT_UPLOAD = "evaluations.build_checkpoint_upload"


def _task(name: str):
    """The registered task ``name``. A process that is not a worker (the web server) has not imported the task
    modules yet: Celery's own autodiscovery (``import_default_modules``) imports them on first use."""
    if name not in current_app.tasks:
        current_app.loader.import_default_modules()
    return current_app.tasks[name]


def _send(name: str, *args, countdown: float | None = None) -> None:
    _task(name).apply_async(args, countdown=countdown)


def send_shards(shard_ids: Iterable[int], *, on_commit: bool = True) -> None:
    """Send one ``run_shard`` message per shard id; by default after the current transaction commits.

    A broker outage must not turn a committed write into a 500: on commit the send is ``robust`` (logged, not
    raised), and the reaper sends again for shards left queued (``runs.lifecycle.stale_queued_shards``).
    """
    ids = list(shard_ids)

    def send() -> None:
        for shard_id in ids:
            _send(RUN_SHARD, shard_id)

    if on_commit:
        transaction.on_commit(send, robust=True)
    else:
        send()


def send_probe(version_id: int) -> None:
    """Send the ``probe_image`` message for an image version once the current transaction commits."""
    transaction.on_commit(lambda: _send(PROBE_IMAGE, version_id), robust=True)


def request_reap() -> None:
    """Ask any worker to run the reaper now (sent at worker start, so a crashed worker's shards recover at once)."""
    _send(REAP_SHARDS)


def send_webhook(evaluation_id: int, attempt: int = 1, *, countdown: float | None = None) -> None:
    """Send the ``deliver_webhook`` message for attempt ``attempt`` of an evaluation's webhook, ``countdown`` seconds
    from now (the exponential backoff between attempts), once the current transaction commits (robust: a broker
    outage loses a webhook, never the status change that caused it)."""
    transaction.on_commit(lambda: _send(DELIVER_WEBHOOK, evaluation_id, attempt, countdown=countdown), robust=True)


def send_dataset_export(export_id: int, *, countdown: float | None = None) -> None:
    """Send the ``build_dataset_export`` message for a dataset export once the current transaction commits
    (``countdown`` seconds from then: an export waiting for a build slot)."""
    transaction.on_commit(lambda: _send(BUILD_DATASET_EXPORT, export_id, countdown=countdown), robust=True)


def send_checkpoint_upload(upload_id: int) -> None:
    """Send the ``build_checkpoint_upload`` message for a dashboard upload once the current transaction commits."""
    transaction.on_commit(lambda: _send(BUILD_CHECKPOINT_UPLOAD, upload_id), robust=True)
