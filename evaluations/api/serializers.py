"""Response serializers for /v1 (they also document the responses in OpenAPI)."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

__all__ = [
    "ErrorSerializer",
    "EvaluationDetailSerializer",
    "EvaluationSerializer",
    "ImageSerializer",
    "PreviewSerializer",
]


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.ListField(child=serializers.DictField(), help_text="[{path, message}] for request errors")


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


class ProgressSerializer(serializers.Serializer):
    completedEpisodes = serializers.IntegerField(source="completed_episodes")  # noqa: N815
    totalEpisodes = serializers.IntegerField(source="total_episodes")  # noqa: N815
    erroredEpisodes = serializers.IntegerField(source="errored_episodes")  # noqa: N815


class EvaluationSerializer(serializers.Serializer):
    """An evaluation summary (list items, submit, cancel)."""

    id = serializers.CharField(source="public_id")
    name = serializers.CharField(required=False, help_text="absent when the request had no name")
    status = serializers.CharField(help_text="queued | running | cancelling | completed | failed | cancelled")
    progress = ProgressSerializer(source="*")
    tags = serializers.DictField(child=serializers.CharField())
    metadata = serializers.DictField()
    warnings = serializers.ListField(child=serializers.CharField())
    error = serializers.SerializerMethodField()
    createdBy = serializers.SerializerMethodField()  # noqa: N815
    createdAt = serializers.DateTimeField(source="created_at")  # noqa: N815
    updatedAt = serializers.DateTimeField(source="updated_at")  # noqa: N815
    startedAt = serializers.DateTimeField(source="started_at", allow_null=True)  # noqa: N815
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)  # noqa: N815
    dashboardUrl = serializers.SerializerMethodField()  # noqa: N815

    def get_error(self, obj) -> dict | None:
        return {"message": obj.error_message} if obj.error_message else None

    def get_createdBy(self, obj) -> str | None:  # noqa: N802
        return obj.creator.username if obj.creator_id and obj.creator else None

    def get_dashboardUrl(self, obj) -> str:  # noqa: N802
        return f"{settings.PUBLIC_URL}{obj.get_absolute_url()}"

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not instance.name:
            # The CLI shows `name` when it is a string, else metadata.evaluationLabel.
            data.pop("name", None)
        return data


class WorkloadSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    model = serializers.CharField(source="model_ref")
    modelDigest = serializers.CharField(source="model_version.digest", allow_null=True, help_text="null for imported evaluations")  # noqa: N815
    env = serializers.CharField(source="env_ref")
    envDigest = serializers.CharField(source="env_version.digest", allow_null=True, help_text="null for imported evaluations")  # noqa: N815
    taskId = serializers.CharField(source="task_id")  # noqa: N815
    benchmark = serializers.CharField()
    scenario = serializers.CharField()
    perturbation = serializers.CharField()
    episodes = serializers.IntegerField()
    seed = serializers.IntegerField()
    workers = serializers.IntegerField()
    maxSteps = serializers.IntegerField(source="max_steps", allow_null=True)  # noqa: N815
    completedEpisodes = serializers.IntegerField(source="done")  # noqa: N815
    erroredEpisodes = serializers.IntegerField(source="errored")  # noqa: N815


class EvaluationDetailSerializer(EvaluationSerializer):
    """One evaluation in full: the summary plus the request as received and the effective config."""

    request = serializers.JSONField(help_text="the request body as received (parsed)")
    config = serializers.JSONField(help_text="effective configuration: resolved digests, defaults, seeds")
    workloads = WorkloadSerializer(many=True)


class PreviewSerializer(serializers.Serializer):
    valid = serializers.BooleanField()
    warnings = serializers.ListField(child=serializers.CharField())
    workloads = serializers.ListField(child=serializers.DictField())
    estimates = serializers.DictField()
    config = serializers.DictField()


class ImageVersionSerializer(serializers.Serializer):
    digest = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    probeStatus = serializers.CharField(source="probe_status")  # noqa: N815
    probeLog = serializers.CharField(source="probe_log")  # noqa: N815
    size = serializers.IntegerField()
    pushedAt = serializers.DateTimeField(source="pushed_at")  # noqa: N815
    checkpoints = serializers.SerializerMethodField()

    def get_checkpoints(self, obj) -> list[str]:
        return list(obj.checkpoints)


class ImageSerializer(serializers.Serializer):
    reference = serializers.CharField(source="path")
    kind = serializers.CharField()
    description = serializers.CharField()
    currentVersion = serializers.CharField(source="current_version.digest", allow_null=True)  # noqa: N815
    scenarios = serializers.SerializerMethodField()
    versions = ImageVersionSerializer(many=True, source="versions.all")

    def get_scenarios(self, obj) -> list[dict]:
        if obj.current_version is None:
            return []
        return [
            {"id": s["id"], "name": s.get("name", s["id"]), "successCriterion": s.get("success"),
             **({"instruction": s["instruction"]} if s.get("instruction") else {})}
            for s in obj.current_version.scenarios
        ]
