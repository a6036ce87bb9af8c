"""Paired comparisons (``/v1/comparisons``), regression verdicts (``regression`` of ``/v1/evaluations/{id}``) and
baselines (``/v1/baselines``). ``evaluations.comparisons`` / ``regressions`` build the dicts
(``domain.comparisons`` does the statistics); these serializers describe and render them."""

from __future__ import annotations

from rest_framework import serializers

from ...domain.comparisons import NO_DIFFERENCE
from ...planning.schema import StrictCharField

__all__ = [
    "BaselineListSerializer",
    "BaselineRequestSerializer",
    "BaselineSerializer",
    "ComparisonSerializer",
    "RegressionSerializer",
]

VERDICTS = ["better", "worse", NO_DIFFERENCE]


def _interval(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2, **kwargs)


def _verdict() -> serializers.ChoiceField:
    return serializers.ChoiceField(VERDICTS, allow_null=True, help_text=(
        "B against A after Holm's adjustment across tasks: better / worse when the adjusted p < alpha (direction from "
        "the sign of Δ), else no detectable difference; null when nothing pairs or nothing is defined"))


def _basis() -> serializers.ChoiceField:
    return serializers.ChoiceField(["success", "return"], allow_null=True, help_text=(
        "the test the verdict rests on: McNemar on success when any pair has success defined, else Wilcoxon on "
        "returns; null when neither is defined"))


class SideCountsSerializer(serializers.Serializer):
    a = serializers.IntegerField()
    b = serializers.IntegerField()


class SideSerializer(serializers.Serializer):
    evaluation = serializers.CharField(help_text="the evaluation's id")
    model = serializers.CharField(help_text="the model reference compared")
    name = serializers.CharField(help_text="the evaluation's name or label (may be empty)")
    status = serializers.CharField(help_text="the evaluation's status")


class SuccessTableSerializer(serializers.Serializer):
    bothSuccess = serializers.IntegerField()  # noqa: N815
    aOnly = serializers.IntegerField(help_text="pairs where only A succeeded")  # noqa: N815
    bOnly = serializers.IntegerField(help_text="pairs where only B succeeded")  # noqa: N815
    bothFail = serializers.IntegerField()  # noqa: N815


class SuccessComparisonSerializer(serializers.Serializer):
    """Success on paired episodes: Δ = p_B − p_A with Newcombe's (1998, method 10) 95 % interval and McNemar's
    exact test on the discordant pairs."""

    n = serializers.IntegerField(help_text="pairs with success defined on both sides")
    undefined = serializers.IntegerField(help_text="pairs left out because a side has no success verdict")
    table = SuccessTableSerializer()
    successRateA = serializers.FloatField(allow_null=True)  # noqa: N815
    successRateB = serializers.FloatField(allow_null=True)  # noqa: N815
    difference = serializers.FloatField(allow_null=True, help_text="p_B − p_A; null without a pair")
    differenceCi = _interval(allow_null=True, help_text="Newcombe's hybrid score interval [low, high]")  # noqa: N815
    pValue = serializers.FloatField(  # noqa: N815
        allow_null=True, help_text="McNemar's exact two-sided p (1.0 without a discordant pair)")


class RankSumsSerializer(serializers.Serializer):
    positive = serializers.FloatField(help_text="signed-rank sum of the differences where B returned more")
    negative = serializers.FloatField()


class ReturnComparisonSerializer(serializers.Serializer):
    """Returns on paired episodes: the mean paired difference B − A with a Student-t 95 % interval and the Wilcoxon
    signed-rank test (zero differences dropped)."""

    n = serializers.IntegerField(help_text="pairs with a return on both sides")
    undefined = serializers.IntegerField()
    meanA = serializers.FloatField(allow_null=True)  # noqa: N815
    meanB = serializers.FloatField(allow_null=True)  # noqa: N815
    meanDifference = serializers.FloatField(allow_null=True)  # noqa: N815
    meanDifferenceCi = _interval(allow_null=True, help_text="null under two pairs")  # noqa: N815
    zeroDifferences = serializers.IntegerField()  # noqa: N815
    rankSums = RankSumsSerializer(allow_null=True)  # noqa: N815
    pValue = serializers.FloatField(allow_null=True, help_text="Wilcoxon signed-rank two-sided p")  # noqa: N815


def _summary_fields() -> dict:
    # ``return`` is a keyword, so these classes are built with type(); the metaclass collects the fields as usual.
    return {
        "paired": serializers.IntegerField(help_text="episode pairs sharing (task, perturbation, seed)"),
        "success": SuccessComparisonSerializer(),
        "return": ReturnComparisonSerializer(),
        "basis": _basis(),
        "pValue": serializers.FloatField(allow_null=True, help_text="the basis test's p-value"),
        "pAdjusted": serializers.FloatField(allow_null=True,
                                            help_text="Holm-adjusted across the tested tasks; null overall"),
        "verdict": _verdict(),
    }


ComparisonOverallSerializer = type("ComparisonOverallSerializer", (serializers.Serializer,), {
    "__module__": __name__,
    "__doc__": "All pairs pooled: one unadjusted test (Δ weights tasks by their pairs; read returns per task).",
    **_summary_fields(),
})

ComparisonTaskSerializer = type("ComparisonTaskSerializer", (serializers.Serializer,), {
    "__module__": __name__,
    "__doc__": "One task × perturbation.",
    "task": serializers.CharField(help_text="<env>/<taskId>, the pairing identifier"),
    "env": serializers.CharField(),
    "taskId": serializers.CharField(),
    "perturbation": serializers.CharField(help_text="the workload's perturbation label; `none` when unperturbed"),
    "unpaired": SideCountsSerializer(help_text="completed episodes without a partner, per side"),
    "errored": SideCountsSerializer(help_text="errored episodes (never paired), per side"),
    "message": serializers.CharField(allow_null=True, help_text="what was left out, or why nothing pairs"),
    **_summary_fields(),
})


class ComparisonSerializer(serializers.Serializer):
    """Model B against model A on the episodes they share by (task, perturbation, seed)."""

    a = SideSerializer(help_text="the reference (e.g. the baseline)")
    b = SideSerializer(help_text="the challenger; every difference is B − A")
    alpha = serializers.FloatField(help_text="family-wise error rate of the verdicts")
    confidence = serializers.FloatField(help_text="the intervals' confidence level (0.95), unadjusted")
    paired = serializers.IntegerField(help_text="pairs over every task; 0 means nothing pairs")
    unpaired = SideCountsSerializer(
        help_text="completed episodes without a partner, per side (reported, never dropped silently)")
    errored = SideCountsSerializer()
    message = serializers.CharField(allow_null=True, help_text="what was left out, or that nothing pairs")
    tasks = ComparisonTaskSerializer(many=True, help_text="in order of first appearance (A's episodes, then B's)")
    overall = ComparisonOverallSerializer()


# ------------------------------------------------------------------ regressions
class RegressionItemSerializer(serializers.Serializer):
    task = serializers.CharField()
    perturbation = serializers.CharField()
    difference = serializers.FloatField(allow_null=True, help_text="Δ success (or Δ mean return on a return basis)")
    pAdjusted = serializers.FloatField()  # noqa: N815


class RegressionTaskSerializer(serializers.Serializer):
    task = serializers.CharField(
        help_text="<env>/<taskId>, prefixed by `<model> · ` when the evaluation has several models")
    model = serializers.CharField(help_text="the evaluation's model this row judges")
    env = serializers.CharField()
    taskId = serializers.CharField()  # noqa: N815
    perturbation = serializers.CharField()
    paired = serializers.IntegerField()
    unpaired = SideCountsSerializer(help_text="a: the baseline's, b: this evaluation's")
    errored = SideCountsSerializer()
    basis = _basis()
    successRateA = serializers.FloatField(  # noqa: N815
        allow_null=True, help_text="the baseline's, on the paired episodes")
    successRateB = serializers.FloatField(  # noqa: N815
        allow_null=True, help_text="this evaluation's, on the paired episodes")
    difference = serializers.FloatField(allow_null=True, help_text="this evaluation − the baseline, on the basis")
    differenceCi = _interval(allow_null=True, help_text="its 95% interval")  # noqa: N815
    pValue = serializers.FloatField(allow_null=True)  # noqa: N815
    pAdjusted = serializers.FloatField(allow_null=True)  # noqa: N815
    verdict = _verdict()
    message = serializers.CharField(allow_null=True)


class RegressionVerdictSerializer(serializers.Serializer):
    """This evaluation (B) against one baseline (A)."""

    tag = serializers.CharField(help_text="the baselined tag, key:value")
    baseline = serializers.CharField(help_text="the baseline evaluation's id")
    baselineName = serializers.CharField(help_text="its name or label (may be empty)")  # noqa: N815
    regressed = serializers.BooleanField(help_text="some task is significantly worse after Holm's adjustment")
    comparable = serializers.BooleanField(help_text="false when nothing pairs: nothing was tested")
    alpha = serializers.FloatField()
    paired = serializers.IntegerField()
    unpaired = SideCountsSerializer()
    errored = SideCountsSerializer()
    message = serializers.CharField(allow_null=True)
    regressions = RegressionItemSerializer(many=True, help_text="the tasks that regressed")
    tasks = RegressionTaskSerializer(many=True)


class RegressionSerializer(serializers.Serializer):
    """Regression verdicts of a completed evaluation against the baselines of the tags it carries."""

    status = serializers.ChoiceField(["regressed", "no regression", "not comparable"])
    regressed = serializers.BooleanField(help_text="true when any baseline's verdict regressed: fail the build")
    comparable = serializers.BooleanField(help_text="false when some baseline shares no episode with this evaluation")
    baselines = RegressionVerdictSerializer(many=True)


# ------------------------------------------------------------------ baselines
class BaselineSerializer(serializers.Serializer):
    tag = serializers.CharField(help_text="key:value")
    evaluation = serializers.CharField(source="evaluation.public_id", help_text="the baseline evaluation's id")
    evaluationName = serializers.CharField(source="evaluation.label", help_text="its name or label")  # noqa: N815
    createdBy = serializers.SerializerMethodField()  # noqa: N815
    createdAt = serializers.DateTimeField(source="created_at", help_text="when it was set")  # noqa: N815

    def get_createdBy(self, obj) -> str | None:  # noqa: N802
        return obj.created_by.username if obj.created_by_id and obj.created_by else None


class BaselineListSerializer(serializers.Serializer):
    items = BaselineSerializer(many=True, help_text="by tag")


class BaselineRequestSerializer(serializers.Serializer):
    evaluation = StrictCharField(max_length=64, help_text="the id of a completed evaluation carrying the tag")
