"""The image catalog: repositories (``namespace/name``) and their versions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from ..choices import ImageKind, ProbeStatus

__all__ = ["CheckpointUpload", "ImageRepository", "ImageVersion"]

PREBUILT_NAMESPACE = "prebuilt"


class ImageRepositoryQuerySet(models.QuerySet):
    def visible_to(self, organization) -> ImageRepositoryQuerySet:
        """Repositories in the organization's namespace plus the prebuilt ones (everyone may use those)."""
        return self.filter(namespace__in=[PREBUILT_NAMESPACE, organization.slug])


class ImageRepository(models.Model):
    """A repository of env or model images, ``namespace/name``; ``current_version`` is what an untagged reference uses."""

    namespace = models.CharField(max_length=64)
    name = models.CharField(max_length=128)
    #: Blank until the first probe of a pushed image tells env from model.
    kind = models.CharField(max_length=8, choices=ImageKind.choices, blank=True)
    description = models.TextField(blank=True)
    current_version = models.ForeignKey(
        "ImageVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = ImageRepositoryQuerySet.as_manager()

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "name"],
                name="evaluations_imagerepository_unique_path",
                violation_error_message="A repository with this path already exists.",
            )
        ]

    def __str__(self) -> str:
        return self.path

    @property
    def path(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def served_kind(self) -> str:
        """``kind``, else the kind a passed version of it was probed to serve (from the same read as the versions, so
        a repository listed with a passed version always says what it is)."""
        if self.kind:
            return self.kind
        return next((v.kind for v in self.versions.all() if v.kind and v.probe_status == "passed"), "")


class ImageVersion(models.Model):
    """One immutable version of a repository, identified by its content ``digest``.

    ``source`` says how a runtime starts it: ``python://module:Target`` (trusted, local runtime) or
    ``builtin:random``. ``scenarios`` is the env's variant catalog (``[{id, name, params, success}]``);
    ``checkpoints`` maps a model checkpoint name to the load kwargs that select it.
    """

    repository = models.ForeignKey(ImageRepository, on_delete=models.CASCADE, related_name="versions")
    digest = models.CharField(max_length=80)
    tags = models.JSONField(default=list)
    source = models.CharField(max_length=300)
    labels = models.JSONField(default=dict)
    scenarios = models.JSONField(default=list)
    checkpoints = models.JSONField(default=dict)
    #: queued | probing | passed | failed; only ``passed`` versions may be used.
    probe_status = models.CharField(max_length=16, choices=ProbeStatus.choices, default=ProbeStatus.PASSED)
    probe_log = models.TextField(blank=True)
    probed_at = models.DateTimeField(null=True, blank=True)
    #: What this version serves (``env``/``model``) as its probe found, written in the same UPDATE as its probe status,
    #: so a reader never sees a passed version of unknown kind (the repository's own ``kind`` is a second row).
    kind = models.CharField(max_length=8, choices=ImageKind.choices, blank=True)
    #: The describe envelope (label ``dev.rlmesh.describe`` or what the probe read from the served peer).
    describe = models.JSONField(default=dict, blank=True)
    size = models.BigIntegerField(default=0, help_text="compressed size of the layers, bytes")
    pushed_at = models.DateTimeField(default=timezone.now)
    #: A model-car image's LeRobot checkpoint as its probe read it (``services.model_cars``): ``{"path"`` in the image,
    #: ``"type", "inputs", "outputs", "sha256", "storedBytes"}``; empty for every other image. ``storedBytes``: what
    #: it counts in the organization's storage quota while usable.
    lerobot = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-pushed_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "digest"],
                name="evaluations_imageversion_unique_digest",
                violation_error_message="This version already exists.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.repository.path}@{self.digest}"

    def scenario(self, scenario_id: str) -> dict | None:
        """Return the catalog entry with this id, or None."""
        return next((s for s in self.scenarios if s["id"] == scenario_id), None)


class CheckpointUpload(models.Model):
    """A LeRobot checkpoint folder uploaded from the dashboard, built into a model-car image and pushed to the
    organization's ``repository:tag`` (``services.model_cars.build_and_push``); the push then makes a version probed
    as any other. ``status``: queued → building → pushed, or failed with ``error``."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        BUILDING = "building"
        PUSHED = "pushed"
        FAILED = "failed"

    organization = models.ForeignKey("Organization", on_delete=models.CASCADE, related_name="checkpoint_uploads")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    repository = models.CharField(max_length=128, help_text="the repository name in the organization's namespace")
    tag = models.CharField(max_length=128)
    size = models.BigIntegerField(default=0, help_text="bytes of the uploaded archive")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.repository}:{self.tag} ({self.status})"
