"""Dataset exports of an evaluation's recorded episodes (``evaluations.lerobot``): one row per export asked for,
built by a Celery task into a zip in Django's storage."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .evaluations import Evaluation

__all__ = ["DatasetExport"]


class DatasetExport(models.Model):
    """A LeRobotDataset (lerobot 0.4.4, codebase v3.0) built from an evaluation's recorded steps.

    ``status`` moves ``queued`` → ``running`` → ``ready`` | ``failed``; ``meta`` holds what was written
    (``episodes``, ``frames``, ``bytes``, ``features``, ``fps``, ``repoId``, ``buildSeconds``, ``lerobotVersion``).
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        READY = "ready"
        FAILED = "failed"

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="dataset_exports")
    kind = models.CharField(max_length=16, default="lerobot")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    file = models.FileField(upload_to="datasets/%Y/%m/", max_length=300, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} export of {self.evaluation_id} ({self.status})"
