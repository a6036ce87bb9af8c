"""Worker processes as the platform sees them: one row per Celery pool process that runs shards, on any host."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

__all__ = ["WorkerProcess"]


class WorkerProcess(models.Model):
    """A worker pool process, identified like the shards it claims (``host:pid``). Its liveness thread refreshes
    ``last_seen`` every few seconds; the reaper treats a process silent for ``RLMESH_WORKER_LIVENESS_TIMEOUT`` as dead,
    whatever host it ran on. ``busy_since``/``idle_since`` say whether it runs a shard (the reaper re-sends queued
    shards only while some live process has been idle for a while)."""

    identity = models.CharField(max_length=200, unique=True)
    hostname = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now, db_index=True)
    busy_since = models.DateTimeField(null=True, blank=True)
    idle_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["hostname", "pid"]

    def __str__(self) -> str:
        return self.identity
