"""Scores and metrics of one evaluation. ``reports.evaluation_scores`` / ``evaluation_metrics`` build the dicts
(``domain.scoring.summarize`` and ``group_scores`` do the math); these serializers describe them."""

from __future__ import annotations

from rest_framework import serializers

from ...domain.reproduction import VERDICTS
from ...domain.scoring import GROUP_FIELDS
from ...planning.schema import StrictCharField, StrictFloatField, StrictIntegerField

__all__ = ["MetricsSerializer", "ScoresSerializer"]


def _interval(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2, **kwargs)


class ScoreGroupKeySerializer(serializers.Serializer):
    """The grouping fields of ``groupBy`` (task: model, env, taskId, perturbation; scenario: model, scenario;
    benchmark: model, benchmark; perturbation: model, perturbation; model: model); the others are absent."""

    model = serializers.CharField(required=False)
    env = serializers.CharField(required=False)
    taskId = serializers.CharField(required=False)  # noqa: N815
    scenario = serializers.CharField(required=False)
    benchmark = serializers.CharField(required=False, allow_null=True, help_text="null for a taskId without a benchmark/ prefix")
    perturbation = serializers.CharField(required=False, help_text="`none` when unperturbed")


class PassKRowSerializer(serializers.Serializer):
    k = serializers.IntegerField()
    passAtK = serializers.FloatField(help_text="mean over tasks of 1 − C(n−c, k)/C(n, k) (Chen et al. 2021)")  # noqa: N815
    passAtKCi = _interval(allow_null=True, help_text="95% percentile bootstrap over tasks; null under 2 tasks")  # noqa: N815
    passHatK = serializers.FloatField(help_text="mean over tasks of C(c, k)/C(n, k) (τ-bench)")  # noqa: N815
    passHatKCi = _interval(allow_null=True)  # noqa: N815


class PassKSerializer(serializers.Serializer):
    tasks = serializers.IntegerField()
    minRollouts = serializers.IntegerField(help_text="the smallest judged n per task: k goes up to it")  # noqa: N815
    maxRollouts = serializers.IntegerField()  # noqa: N815
    confidence = serializers.FloatField()
    interval = serializers.CharField()
    rows = PassKRowSerializer(many=True)


class ReferenceSerializer(serializers.Serializer):
    published = serializers.FloatField(help_text="the published success rate, a fraction")
    publishedEpisodes = serializers.IntegerField(allow_null=True, help_text="episodes behind it, when published")  # noqa: N815
    source = serializers.CharField(help_text="where it is published")
    scope = serializers.ChoiceField(["catalog", "operator", "organization"], help_text="whose row it is")
    successes = serializers.IntegerField()
    judged = serializers.IntegerField(help_text="episodes with a verdict: ours is successes / judged")
    successRate = serializers.FloatField()  # noqa: N815
    successRateCi = _interval(help_text="our 95% Wilson interval [low, high]")  # noqa: N815
    verdict = serializers.ChoiceField(VERDICTS, help_text=(
        "reproduced: the published value lies inside our interval and its half-width is at most `tolerance`; "
        "below / above: it lies above / below the interval; undecided: inside, but the interval is wider"))
    tolerance = serializers.FloatField(help_text="the widest half-width at which inside counts as reproduced (0.05)")
    episodesToDecide = serializers.IntegerField(  # noqa: N815
        allow_null=True, help_text="undecided: judged episodes in all that would decide, if the model scored the "
        "published rate")
    moreEpisodes = serializers.IntegerField(allow_null=True, help_text="undecided: how many more than were run")  # noqa: N815


class ScoreGroupSerializer(serializers.Serializer):
    key = ScoreGroupKeySerializer()
    episodes = serializers.IntegerField(help_text="completed episodes (errored ones are counted in errors only)")
    successes = serializers.IntegerField(help_text="episodes judged successful")
    successUndefined = serializers.IntegerField(  # noqa: N815
        help_text="completed episodes without a success verdict: no env flag and no criterion (source `undefined`), "
        "or an agent's open run with no verifiers and no judge (unverified); they count in returns and steps, never "
        "as failures of the success rate")
    successRate = serializers.FloatField(  # noqa: N815
        allow_null=True, help_text="successes / judged episodes; null when no episode completed or none has a verdict "
        "(\"success undefined\": nothing defines success for the task)")
    successRateCi = _interval(allow_null=True, help_text="95% Wilson interval [low, high]")  # noqa: N815
    meanReward = serializers.FloatField(allow_null=True)  # noqa: N815
    meanRewardCi = _interval(allow_null=True, help_text="95% Student-t interval; null under two episodes")  # noqa: N815
    meanSteps = serializers.FloatField(allow_null=True)  # noqa: N815
    errors = serializers.IntegerField(help_text="errored episodes")
    successSources = serializers.DictField(child=serializers.IntegerField(),  # noqa: N815
                                           help_text="verdicts per success source: env, criterion, undefined (and terminated "
                                                     "for episodes recorded before success could be undefined)")
    tasks = serializers.IntegerField(required=False, help_text="rollups across tasks only: how many tasks completed episodes")
    iqmSuccessRate = serializers.FloatField(required=False, help_text="rollups over ≥ 2 tasks: interquartile mean of "  # noqa: N815
                                                                      "per-task success rates (rliable)")
    iqmSuccessRateCi = _interval(required=False, help_text="its stratified bootstrap 95% interval")  # noqa: N815
    passAtK = PassKSerializer(required=False, help_text=(  # noqa: N815
        "when every task of the group has > 1 judged episode: pass@k and pass^k for k = 1 … the smallest n"))
    reference = ReferenceSerializer(required=False, allow_null=True, help_text=(
        "groupBy=benchmark only (an extension field): the model's published number there and the reproduction "
        "verdict; null without one"))


class ScoresSerializer(serializers.Serializer):
    evaluation = serializers.CharField(help_text="the evaluation's id")
    groupBy = serializers.ChoiceField(list(GROUP_FIELDS))  # noqa: N815
    confidence = serializers.FloatField(help_text="the intervals' confidence level (0.95)")
    groups = ScoreGroupSerializer(many=True, help_text="in order of first appearance")


class MetricsDistributionSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    p50 = serializers.FloatField(allow_null=True)
    p95 = serializers.FloatField(allow_null=True)
    max = serializers.FloatField(allow_null=True)


class LatencyPercentilesSerializer(serializers.Serializer):
    p50 = serializers.FloatField(allow_null=True)
    p95 = serializers.FloatField(allow_null=True)


class MetricsLatencySerializer(serializers.Serializer):
    predict = LatencyPercentilesSerializer(help_text="model predict, per step (ms)")
    envStep = LatencyPercentilesSerializer(help_text="env step, per step (ms)")  # noqa: N815


class MetricsServerStartSerializer(serializers.Serializer):
    env = MetricsDistributionSerializer()
    model = MetricsDistributionSerializer()


class MetricsModelBatchesSerializer(serializers.Serializer):
    size = serializers.IntegerField(allow_null=True, help_text="rows of every forward pass (RLMESH_MODEL_BATCH)")
    calls = serializers.DictField(child=serializers.IntegerField(), help_text="forward passes by episodes in them")
    meanRows = serializers.FloatField(allow_null=True)  # noqa: N815
    meanPassMs = serializers.FloatField(allow_null=True, help_text="milliseconds of one forward pass, on average")  # noqa: N815


class MetricsVideosSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    totalBytes = serializers.IntegerField()  # noqa: N815
    bytesPerEpisode = MetricsDistributionSerializer()  # noqa: N815
    encodeMsPerEpisode = MetricsDistributionSerializer()  # noqa: N815
    renderMsPerEpisode = MetricsDistributionSerializer()  # noqa: N815


class MetricsSerializer(serializers.Serializer):
    evaluation = serializers.CharField(help_text="the evaluation's id")
    episodes = serializers.IntegerField()
    errors = serializers.IntegerField()
    steps = serializers.IntegerField(help_text="steps of completed episodes")
    wallSeconds = serializers.FloatField(allow_null=True, help_text="first episode start → last episode end")  # noqa: N815
    episodesPerSecond = serializers.FloatField(allow_null=True)  # noqa: N815
    stepsPerSecond = serializers.FloatField(allow_null=True)  # noqa: N815
    meanEpisodeSeconds = serializers.FloatField(allow_null=True)  # noqa: N815
    latencyMs = MetricsLatencySerializer()  # noqa: N815
    queueWaitSeconds = MetricsDistributionSerializer(help_text="shard queued → started")  # noqa: N815
    serverStartSeconds = MetricsServerStartSerializer()  # noqa: N815
    modelBatches = MetricsModelBatchesSerializer(allow_null=True, help_text=(  # noqa: N815
        "batching model servers (LeRobot ACT with RLMESH_MODEL_BATCH set); null when none batched"))
    videos = MetricsVideosSerializer()


class PublishedScoreSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    model = serializers.CharField(help_text="model reference without tag or digest, or an endpoint's label")
    benchmark = serializers.CharField()
    successRate = serializers.FloatField(source="success_rate", help_text="a fraction in [0, 1]")  # noqa: N815
    episodes = serializers.IntegerField(allow_null=True)
    source = serializers.CharField()
    scope = serializers.SerializerMethodField(help_text="catalog (the platform's), operator, or organization (yours)")

    def get_scope(self, obj) -> str:
        return "organization" if obj.organization_id else "catalog" if obj.builtin else "operator"


class PublishedScoreListSerializer(serializers.Serializer):
    items = PublishedScoreSerializer(many=True)


class _BenchmarkField(StrictCharField, serializers.RegexField):
    """A benchmark's name: a JSON string (``StrictCharField``: numbers are not coerced) of ASCII letters, digits,
    ``_ . -`` (``RegexField``)."""

    default_error_messages = {"invalid": "letters, digits, _ . - (starting with a letter or digit), e.g. libero_spatial"}


class PublishedScoreRequestSerializer(serializers.Serializer):
    model = StrictCharField(max_length=300, help_text="as in a request's models[]: a tag or digest is dropped")
    benchmark = _BenchmarkField(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$", help_text="e.g. libero_spatial")
    successRate = StrictFloatField(min_value=0.0, max_value=1.0, help_text="a fraction in [0, 1]")  # noqa: N815
    episodes = StrictIntegerField(min_value=1, max_value=10_000_000, required=False, allow_null=True)
    source = StrictCharField(max_length=500, help_text="where it is published: a paper, a repository, a run")
