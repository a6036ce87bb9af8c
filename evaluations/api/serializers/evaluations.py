"""Evaluations: summaries (list items, submit, cancel), the full evaluation, a list page and a preview."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ...choices import EvaluationStatus
from .comparisons import RegressionSerializer

__all__ = [
    "EvaluationDetailSerializer",
    "EvaluationPageSerializer",
    "EvaluationSerializer",
    "PreviewSerializer",
]


class ProgressSerializer(serializers.Serializer):
    completedEpisodes = serializers.IntegerField(source="completed_episodes")  # noqa: N815
    totalEpisodes = serializers.IntegerField(source="total_episodes")  # noqa: N815
    erroredEpisodes = serializers.IntegerField(source="errored_episodes")  # noqa: N815


class EvaluationErrorSerializer(serializers.Serializer):
    message = serializers.CharField(help_text="why the evaluation failed")


class EvaluationSerializer(serializers.Serializer):
    """An evaluation summary (list items, submit, cancel)."""

    id = serializers.CharField(source="public_id")
    name = serializers.CharField(required=False, help_text="absent when the request had no name")
    status = serializers.ChoiceField(EvaluationStatus.choices, help_text="completed, failed and cancelled are terminal")
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

    @extend_schema_field(EvaluationErrorSerializer(allow_null=True))
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
    config = serializers.JSONField(help_text="effective configuration: resolved digests, defaults, seeds (the shape of the "
                                             "EffectiveConfig schema); for an imported run, where it came from")
    workloads = WorkloadSerializer(many=True)
    regression = serializers.SerializerMethodField()
    baselineFor = serializers.SerializerMethodField()  # noqa: N815

    @extend_schema_field(RegressionSerializer(allow_null=True, help_text=(
        "Verdicts per task against the baselines of the tags this evaluation carries (extension; the official "
        "clients ignore it). null unless the evaluation completed, carries a baselined tag and was created after "
        "that baseline. CI: fail the build unless `.regression.comparable and (.regression.regressed | not)`.")))
    def get_regression(self, obj) -> dict | None:
        return getattr(obj, "regression", None)

    @extend_schema_field(serializers.ListField(child=serializers.CharField(), help_text=(
        "the tags (key:value) this evaluation is the baseline of")))
    def get_baselineFor(self, obj) -> list[str]:  # noqa: N802
        return list(getattr(obj, "baseline_tags", []))


class EvaluationPageSerializer(serializers.Serializer):
    items = EvaluationSerializer(many=True, help_text="newest first")
    nextCursor = serializers.CharField(allow_null=True, help_text="pass as ?cursor= for the next page; null on the last")  # noqa: N815


# ------------------------------------------------------------------ preview
class PreviewWorkloadSerializer(serializers.Serializer):
    model = serializers.CharField(help_text="the model reference as requested")
    env = serializers.CharField()
    taskId = serializers.CharField()  # noqa: N815
    episodes = serializers.IntegerField()
    workers = serializers.IntegerField()
    shards = serializers.IntegerField()
    seeds = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2,
                                  help_text="[first, last] episode seed")


class SampleSizeSerializer(serializers.Serializer):
    """What a task's episode count buys: the 95 % Wilson interval half-width of its success rate, assuming the worst
    case p = 0.5, and the episodes a ±5 pp and a ±10 pp interval need."""

    episodes = serializers.IntegerField(help_text="the task's requested episodes (per model)")
    p = serializers.FloatField(help_text="the assumed success rate (0.5: the widest interval)")
    halfWidth = serializers.FloatField(help_text="expected half-width as a fraction (0.05 = ±5 pp)")  # noqa: N815
    episodesFor5pp = serializers.IntegerField(help_text="episodes for a ±5 pp interval")  # noqa: N815
    episodesFor10pp = serializers.IntegerField(help_text="episodes for a ±10 pp interval")  # noqa: N815


class TaskSampleSizeSerializer(serializers.Serializer):
    env = serializers.CharField()
    taskId = serializers.CharField()  # noqa: N815
    perturbation = serializers.CharField(help_text="`none` when unperturbed")
    sampleSize = SampleSizeSerializer()  # noqa: N815
    warning = serializers.CharField(allow_null=True, help_text="set when the task has fewer than 20 episodes")


class PreviewEstimatesSerializer(serializers.Serializer):
    episodes = serializers.IntegerField()
    workloads = serializers.IntegerField()
    shards = serializers.IntegerField()
    maxEnvSteps = serializers.IntegerField(help_text="episodes × the step limit of each task")  # noqa: N815
    maxRenderedFrames = serializers.IntegerField(help_text="frames rendered for recorded episodes, at most")  # noqa: N815
    estimatedSecondsUpperBound = serializers.FloatField()  # noqa: N815
    sampleSizes = TaskSampleSizeSerializer(  # noqa: N815
        many=True, help_text="one per task of the request, in request order")


class EffectiveConfigModelSerializer(serializers.Serializer):
    model = serializers.CharField()
    repository = serializers.CharField()
    checkpoint = serializers.CharField(allow_null=True)
    digest = serializers.CharField()
    source = serializers.CharField()
    envVars = serializers.DictField(child=serializers.CharField())  # noqa: N815


class EffectiveConfigTaskSerializer(serializers.Serializer):
    env = serializers.CharField()
    repository = serializers.CharField()
    digest = serializers.CharField()
    source = serializers.CharField()
    taskId = serializers.CharField()  # noqa: N815
    makeKwargs = serializers.DictField(help_text="keyword arguments the env is made with")  # noqa: N815
    successCriterion = serializers.DictField(allow_null=True)  # noqa: N815
    episodes = serializers.IntegerField()
    seed = serializers.IntegerField()
    seeds = serializers.ListField(child=serializers.IntegerField())
    workers = serializers.IntegerField()
    maxSteps = serializers.IntegerField(allow_null=True)  # noqa: N815
    perturbation = serializers.CharField()
    record = serializers.CharField()


class EffectiveConfigRuntimeSerializer(serializers.Serializer):
    rlmesh = serializers.CharField()
    workflowEdition = serializers.CharField()  # noqa: N815


class EffectiveConfigSerializer(serializers.Serializer):
    """What a submitted evaluation records as its config: resolved digests, defaults, seeds and timeouts."""

    models = EffectiveConfigModelSerializer(many=True)
    tasks = EffectiveConfigTaskSerializer(many=True)
    timeoutSeconds = serializers.FloatField(allow_null=True)  # noqa: N815
    episodeTimeoutSeconds = serializers.FloatField()  # noqa: N815
    requestTimeoutSeconds = serializers.FloatField()  # noqa: N815
    runtime = EffectiveConfigRuntimeSerializer()


class PreviewSerializer(serializers.Serializer):
    valid = serializers.BooleanField()
    warnings = serializers.ListField(child=serializers.CharField(), help_text=(
        "what submitting would warn about, plus one per task with fewer than 20 episodes (its interval is wide)"))
    workloads = PreviewWorkloadSerializer(many=True, help_text="one per model × task; the CLI prints how many")
    estimates = PreviewEstimatesSerializer()
    config = EffectiveConfigSerializer()
