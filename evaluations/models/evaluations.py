"""Evaluations and what they expand into: workloads (model × task), shards (episode ranges), episodes, logs."""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from ..choices import TERMINAL_STATUSES, EpisodeStatus, EvaluationStatus, LogLevel, ShardStatus, StopCondition, SuccessSource
from ..domain.text import folded
from .images import ImageVersion
from .organizations import ApiKey, Organization

__all__ = ["Episode", "Evaluation", "EvaluationLog", "Shard", "Workload"]


def new_public_id() -> str:
    return "eval_" + secrets.token_hex(8)


class EvaluationQuerySet(models.QuerySet):
    def for_org(self, organization: Organization) -> EvaluationQuerySet:
        """Only this organization's evaluations; every read of evaluations goes through here."""
        return self.filter(organization=organization)


class Evaluation(models.Model):
    """One submitted request: M models × T tasks × N episodes.

    ``request_raw`` holds the body exactly as received; ``config`` the effective configuration (resolved
    image digests, defaults, per-episode seeds) that the workers run.
    """

    public_id = models.CharField(max_length=32, unique=True, default=new_public_id)
    #: The seed-004 API's id of this evaluation (``/agents/evaluations/run/{run_id}``); every evaluation has one.
    run_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="evaluations")
    creator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    api_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    name = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=EvaluationStatus.choices, default=EvaluationStatus.QUEUED)
    request_raw = models.TextField()
    request = models.JSONField()
    config = models.JSONField(default=dict)
    tags = models.JSONField(default=dict)
    metadata = models.JSONField(default=dict)
    warnings = models.JSONField(default=list)
    error_message = models.TextField(blank=True)
    #: "platform" for evaluations run here; "import" for rlmesh.result.v1 bundles uploaded from elsewhere.
    origin = models.CharField(max_length=16, default="platform", choices=[("platform", "platform"), ("import", "import")])
    timeout_seconds = models.FloatField(null=True, blank=True)
    #: An agent run's endpoint key, Fernet-encrypted (evaluations.crypto); never in a response, log or page.
    endpoint_key = models.TextField(blank=True)
    #: An open run's judge endpoint key, encrypted like ``endpoint_key`` (read by runs.judging in the worker).
    judge_key = models.TextField(blank=True)
    #: Where the status document is POSTed (signed, Standard Webhooks) when the evaluation ends; "" for none.
    webhook_url = models.CharField(max_length=2048, blank=True)
    total_episodes = models.PositiveIntegerField(default=0)
    # Denormalized so list pages read progress without counting episodes; bumped in the same
    # transaction that inserts the episode row.
    completed_episodes = models.PositiveIntegerField(default=0)
    errored_episodes = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    #: ``name`` and ``metadata.evaluationLabel`` folded (domain.text.folded), kept by ``save()``: what ``?q=``
    #: searches, so it finds the same evaluations in every script on SQLite and PostgreSQL alike.
    folded_name = models.TextField(blank=True, default="", editable=False)
    folded_label = models.TextField(blank=True, default="", editable=False)

    objects = EvaluationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["organization", "-created_at", "-id"], name="evaluations_org_created")]

    def __str__(self) -> str:
        return self.public_id

    def get_absolute_url(self) -> str:
        return reverse("evaluations:evaluation_detail", args=[self.public_id])

    def save(self, *args, **kwargs):
        self.folded_name, self.folded_label = folded(self.name), folded(str(self.metadata.get("evaluationLabel") or ""))
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and {"name", "metadata"} & set(update_fields):
            kwargs["update_fields"] = {*update_fields, "folded_name", "folded_label"}
        super().save(*args, **kwargs)

    @property
    def label(self) -> str:
        return self.name or str(self.metadata.get("evaluationLabel") or "")

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def deadline(self):
        """When the evaluation times out (``started_at`` + ``timeout_seconds``), or None."""
        if self.timeout_seconds is None or self.started_at is None:
            return None
        return self.started_at + timezone.timedelta(seconds=self.timeout_seconds)


class Workload(models.Model):
    """One model × task pair of an evaluation, with everything a worker needs to run it."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="workloads")
    index = models.PositiveIntegerField()
    model_ref = models.CharField(max_length=300)
    #: Null only for imported evaluations, whose model and env never passed through this platform's registry.
    model_version = models.ForeignKey(ImageVersion, on_delete=models.PROTECT, related_name="+", null=True, blank=True)
    model_checkpoint = models.CharField(max_length=128, blank=True)
    env_ref = models.CharField(max_length=300)
    env_version = models.ForeignKey(ImageVersion, on_delete=models.PROTECT, related_name="+", null=True, blank=True)
    task_id = models.CharField(max_length=300)
    benchmark = models.CharField(max_length=128, blank=True)
    scenario = models.CharField(max_length=300, blank=True)
    perturbation = models.CharField(max_length=128, blank=True)
    #: Which episodes get a video: "none", "all", "failures" or "first:N" (see runs.recording).
    record = models.CharField(max_length=32, default="none")
    #: Which episodes keep their steps (observations, actions, rewards; ``runs.steps``): same modes as ``record``.
    record_steps = models.CharField(max_length=32, default="none")
    episodes = models.PositiveIntegerField()
    seed = models.BigIntegerField(default=0)
    workers = models.PositiveIntegerField(default=1)
    max_steps = models.PositiveIntegerField(null=True, blank=True)
    env_vars = models.JSONField(default=dict)
    env_kwargs = models.JSONField(default=dict)
    model_kwargs = models.JSONField(default=dict)
    #: The model server's secret, Fernet-encrypted (evaluations.crypto): a policy server endpoint's key; never in a
    #: response, log or page.
    model_secret = models.TextField(blank=True, default="")
    success_criterion = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict)

    class Meta:
        ordering = ["evaluation", "index"]
        constraints = [
            models.UniqueConstraint(fields=["evaluation", "index"], name="evaluations_workload_unique_index")
        ]

    def __str__(self) -> str:
        return f"{self.evaluation_id}#{self.index} {self.model_ref} × {self.env_ref}:{self.task_id}"

    def seed_for(self, index: int) -> int:
        """Episode ``index`` always runs with seed ``seed + index``, however the task is sharded."""
        return self.seed + index

    @property
    def instruction(self) -> str:
        """The language instruction of the task's scenario in the env's catalog (LIBERO, Meta-World, MiniWoB);
        ``""`` when it has none. An env-side perturbation that rewrites it (LIBERO-PRO ``language``, ``task``) is
        named by ``perturbation``."""
        scenario = self.env_version.scenario(self.task_id) if self.env_version_id else None
        return (scenario or {}).get("instruction") or ""


class Shard(models.Model):
    """A contiguous range ``[start, stop)`` of one workload's episode indices, run by one Celery task."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="shards")
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="shards")
    index = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    stop = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=ShardStatus.choices, default=ShardStatus.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    #: ``host:pid`` of the worker process that claimed it, for the reaper.
    claimed_by = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    #: Seconds from server start to readiness, per server kind, of the last attempt.
    timings = models.JSONField(default=dict)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["workload", "index"]
        constraints = [models.UniqueConstraint(fields=["workload", "index"], name="evaluations_shard_unique_index")]
        # The reaper and finalization look up shards by status.
        indexes = [models.Index(fields=["status"], name="evaluations_shard_status")]

    def __str__(self) -> str:
        return f"shard {self.workload_id}/{self.index} [{self.start}, {self.stop})"

    def server_name(self, kind: str) -> str:
        """Name of the shard's ``kind`` (``env``/``model``) server or container; the container reaper keeps the
        containers whose name belongs to a running shard."""
        return f"{self.evaluation.public_id}-w{self.workload.index}-s{self.index}-{kind}"


class Episode(models.Model):
    """The outcome of one episode; unique on (workload, index) so a re-delivered shard never duplicates it."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="episodes")
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="episode_set")
    shard = models.ForeignKey(Shard, on_delete=models.SET_NULL, null=True, blank=True, related_name="episodes")
    index = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    status = models.CharField(max_length=16, choices=EpisodeStatus.choices)
    reward = models.FloatField(null=True, blank=True)
    success = models.BooleanField(null=True, blank=True)
    success_source = models.CharField(max_length=16, choices=SuccessSource.choices, blank=True)
    steps = models.PositiveIntegerField(default=0)
    terminated = models.BooleanField(default=False)
    truncated = models.BooleanField(default=False)
    stop_condition = models.CharField(max_length=16, choices=StopCondition.choices)
    error = models.TextField(blank=True)
    wall_ms = models.FloatField(null=True, blank=True)
    predict_ms = models.FloatField(null=True, blank=True, help_text="mean per-step model predict latency")
    step_ms = models.FloatField(null=True, blank=True, help_text="mean per-step env step latency")
    #: Log-bucketed per-step latency histograms ({"predict": {bucket: count}, "step": {...}}), see scoring.
    latency = models.JSONField(default=dict)
    #: The perturbation as applied to this episode: {"name", "strength", ...drawn values such as a physics scale}.
    perturbation = models.JSONField(default=dict)
    #: H.264 MP4 of the episode when the task asked for recording (Django storage; filesystem by default).
    video = models.FileField(upload_to="episodes/%Y/%m/", max_length=300, blank=True)
    #: {"bytes", "frames", "fps", "width", "height", "encodeMs", "renderMs", "codec"} of ``video``.
    video_meta = models.JSONField(default=dict)
    #: The episode's steps when its task asked for them (``recordSteps``): a compressed ``.npz`` of every
    #: observation, the actions the env received, rewards and end flags (Django storage; ``runs.steps``).
    steps_file = models.FileField(upload_to="steps/%Y/%m/", max_length=300, blank=True)
    #: {"bytes", "steps", "keys", "writeMs"} of ``steps_file``, or {"error"} when the steps could not be kept.
    steps_meta = models.JSONField(default=dict, blank=True)
    #: An agent rollout's transcript: ordered, typed events per step as JSON (Django storage; runs.transcripts).
    transcript = models.FileField(upload_to="transcripts/%Y/%m/", max_length=300, blank=True)
    #: An agent rollout's summary: steps, tool calls, invalid calls, token usage and endpoint time sums, how it ended.
    agent = models.JSONField(default=dict, blank=True)
    #: The checks that decided the outcome: ``[{"name", "kind", "passed", "score", "detail"}]`` (MiniWoB: ``page_reward``
    #: of kind ``page``; the shop: its state checks, kind ``state`` with the ``check``; an open run's ``judge``).
    verifiers = models.JSONField(default=list, blank=True)
    #: SHA-256 (64 hex characters) over the episode's observations, actions, rewards and end flags in a canonical
    #: encoding (domain.trajectory); empty when unknown (an errored episode, an import without one, older rows).
    trajectory_digest = models.CharField(max_length=64, blank=True, default="")
    #: Whether ``trajectory_digest`` can be compared with another run's: False when the env declares its trajectory
    #: depends on timing (prebuilt.catalog.TRAJECTORY_LABEL) or the wall-time cap ended the episode; None: no digest.
    digest_comparable = models.BooleanField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["workload", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "index"],
                name="evaluations_episode_unique_index",
                violation_error_message="This episode was already recorded.",
            )
        ]

    def __str__(self) -> str:
        return f"episode {self.workload_id}/{self.index}"


class EvaluationLog(models.Model):
    """A line of worker/runtime log for an evaluation (server start, readiness, errors)."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="logs")
    shard = models.ForeignKey(Shard, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    level = models.CharField(max_length=8, choices=LogLevel.choices, default=LogLevel.INFO)
    source = models.CharField(max_length=64, blank=True)
    message = models.TextField()

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"[{self.level}] {self.message[:60]}"
