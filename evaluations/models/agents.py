"""What agent runs add to evaluations: the log of webhook deliveries."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .evaluations import Evaluation

__all__ = ["WebhookDelivery"]


class WebhookDelivery(models.Model):
    """One attempt to POST an evaluation's status document to its ``webhook_url`` (shown on the run's page and in
    the status API). ``status_code`` is null when no HTTP answer came (``error`` says why)."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="webhook_deliveries")
    attempt = models.PositiveIntegerField()
    webhook_id = models.CharField(max_length=100)
    url = models.CharField(max_length=2048)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    #: When the next attempt is due (null: none follows).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["evaluation", "attempt", "id"]

    def __str__(self) -> str:
        return f"{self.webhook_id} attempt {self.attempt}: {self.status_code or self.error[:40]}"

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
