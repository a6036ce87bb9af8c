"""Regression verdicts against baselines, computed on read and cached.

A completed evaluation gets a verdict against every baseline of its organization whose tag it carries, when it was
created after the baseline evaluation (the baseline itself gets none). The verdict is
:func:`evaluations.domain.comparisons.regression_verdict` with A = the baseline, B = the evaluation, per task and
perturbation, Holm-adjusted at ``ALPHA``. Models: with several models in the evaluation, each is compared with the
baseline's model of the same reference, or with the baseline's only model (its tasks then also say which model);
with one model on each side, those two are compared whatever their references (a new checkpoint against the old).

Both evaluations are finished, so their episodes no longer change: a verdict is cached per (evaluation, baseline
evaluation) for ``CACHE_SECONDS``; replacing the baseline changes the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.core.cache import cache

from ..choices import EvaluationStatus
from .comparisons import ALPHA, annotate_tasks, rows_by_evaluation
from ..domain import comparisons
from ..models import Baseline, Evaluation, Organization

__all__ = ["CACHE_SECONDS", "applies", "attach_regressions", "regression_rows", "summarize"]

CACHE_SECONDS = 7 * 24 * 3600
_TASK_FIELDS = ("task", "model", "env", "taskId", "perturbation", "paired", "unpaired", "errored", "basis", "pValue",
                "pAdjusted", "verdict", "message")


def applies(baseline: Baseline, evaluation: Evaluation) -> bool:
    """Whether ``evaluation`` is judged against ``baseline``: same organization, completed, carries the tag, created
    after the baseline evaluation, and is not the baseline itself."""
    base = baseline.evaluation
    return (
        evaluation.organization_id == baseline.organization_id
        and evaluation.status == EvaluationStatus.COMPLETED
        and evaluation.tags.get(baseline.tag_key) == baseline.tag_value
        and evaluation.pk != base.pk
        and (evaluation.created_at, evaluation.pk) > (base.created_at, base.pk)
    )


def regression_rows(baseline: Mapping[str, list[dict]], candidate: Mapping[str, list[dict]]) -> tuple[list, list, dict]:
    """``(a_rows, b_rows, labels)`` for :func:`regression_verdict` from each side's ``{model: rows}`` (see the module
    docstring for which models meet). With several candidate models a task key is ``<model> · <env>/<taskId>``;
    ``labels`` maps each key to its ``model``, ``env`` and ``taskId``."""
    only = next(iter(baseline)) if len(baseline) == 1 else None
    several = len(candidate) > 1
    a_rows, b_rows, labels = [], [], {}
    for model, rows in candidate.items():
        reference = model if model in baseline else only

        def key(row: dict, model: str = model) -> str:
            return f"{model} · {row['task']}" if several else row["task"]

        for side, side_rows in (("b", rows), ("a", baseline.get(reference, []) if reference else [])):
            for row in side_rows:
                labels[key(row)] = {"model": model, "env": row["env"], "taskId": row["taskId"]}
                (b_rows if side == "b" else a_rows).append({**row, "task": key(row)})
    return a_rows, b_rows, labels


def _difference(task: Mapping) -> tuple[float | None, list[float] | None]:
    if task["basis"] == "return":
        return task["return"]["meanDifference"], task["return"]["meanDifferenceCi"]
    return task["success"]["difference"], task["success"]["differenceCi"]


def _verdict(baseline_rows: Mapping, candidate_rows: Mapping) -> dict:
    """The cached part of a verdict: counts, message, regressions and slim per-task rows."""
    a_rows, b_rows, labels = regression_rows(baseline_rows, candidate_rows)
    result = annotate_tasks(comparisons.regression_verdict(a_rows, b_rows, alpha=ALPHA), labels)
    tasks = []
    for t in result["tasks"]:
        difference, ci = _difference(t)
        tasks.append({**{f: t.get(f) for f in _TASK_FIELDS}, "difference": difference, "differenceCi": ci,
                      "successRateA": t["success"]["successRateA"], "successRateB": t["success"]["successRateB"]})
    return {
        "regressed": result["regressed"], "comparable": result["comparable"], "alpha": result["alpha"],
        "paired": result["paired"], "unpaired": result["unpaired"], "errored": result["errored"],
        "message": result["message"], "regressions": result["regressions"], "tasks": tasks,
    }


def _cache_key(evaluation: Evaluation, baseline: Baseline) -> str:
    return f"rlmesh:regression:v1:{evaluation.public_id}:{baseline.evaluation.public_id}:{ALPHA}"


def summarize(verdicts: Sequence[dict]) -> dict | None:
    """One evaluation's verdicts against its baselines, rolled up: ``status`` is ``regressed`` when any verdict
    regressed, else ``not comparable`` when any compared nothing, else ``no regression``; None without a verdict."""
    if not verdicts:
        return None
    regressed = any(v["regressed"] for v in verdicts)
    comparable = all(v["comparable"] for v in verdicts)
    status = "regressed" if regressed else "no regression" if comparable else "not comparable"
    return {"status": status, "regressed": regressed, "comparable": comparable, "baselines": list(verdicts)}


def attach_regressions(evaluations: Sequence[Evaluation], organization: Organization) -> None:
    """Set ``regression`` (:func:`summarize` of its verdicts, or None), ``baseline_tags`` (the tags it is the
    baseline of) and ``tag_baselines`` (``{tag: Baseline}`` for each of its tags that has one) on each evaluation.

    Queries, whatever the number of evaluations and episodes: none when no evaluation has a tag; else one for the
    baselines of those tags; and on a cache miss one more for the episodes of every evaluation involved."""
    for e in evaluations:
        e.regression, e.baseline_tags, e.tag_baselines = None, [], {}
    pairs = {(k, v) for e in evaluations for k, v in e.tags.items() if isinstance(v, str)}
    if not pairs:
        return
    baselines = list(Baseline.objects.for_org(organization).for_tags(pairs).select_related("evaluation"))
    wanted = [(e, b) for e in evaluations for b in baselines if applies(b, e)]
    for e in evaluations:
        e.baseline_tags = [b.tag for b in baselines if b.evaluation_id == e.pk]
        e.tag_baselines = {b.tag: b for b in baselines if e.tags.get(b.tag_key) == b.tag_value}
    keys = {(e.pk, b.pk): _cache_key(e, b) for e, b in wanted}
    found = cache.get_many(list(keys.values())) if keys else {}
    missing = [(e, b) for e, b in wanted if keys[(e.pk, b.pk)] not in found]
    if missing:
        rows = rows_by_evaluation({pk for e, b in missing for pk in (e.pk, b.evaluation_id)})
        computed = {keys[(e.pk, b.pk)]: _verdict(rows.get(b.evaluation_id, {}), rows.get(e.pk, {})) for e, b in missing}
        cache.set_many(computed, CACHE_SECONDS)
        found.update(computed)
    for e in evaluations:
        verdicts = [
            {"tag": b.tag, "baseline": b.evaluation.public_id, "baselineName": b.evaluation.label,
             **found[keys[(e.pk, b.pk)]]}
            for ee, b in wanted if ee is e
        ]
        e.regression = summarize(verdicts)
