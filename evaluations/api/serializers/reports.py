"""Scores and metrics of one evaluation. ``reports.evaluation_scores`` / ``evaluation_metrics`` build the dicts
(``domain.scoring.summarize`` and ``group_scores`` do the math); these serializers describe them."""

from __future__ import annotations

from rest_framework import serializers

from ...domain.scoring import GROUP_FIELDS

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
    videos = MetricsVideosSerializer()
