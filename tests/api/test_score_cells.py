"""Scores come from one database aggregate (reports.score_cells); they must equal scoring the episodes row by row."""

import pytest

from evaluations.reports import scores as reports
from evaluations.domain import scoring
from evaluations.models import Episode
from tests.support.comparisons import finished


def assert_close(a, b, path="$"):
    """Equal structures, floats within 1e-9 relative."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            assert_close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9), path
    else:
        assert a == b, path


def _rows(evaluation):
    return [{"status": e["status"], "success": e["success"], "reward": e["reward"], "steps": e["steps"],
             "successSource": e["success_source"], "model": e["workload__model_ref"], "env": e["workload__env_ref"],
             "taskId": e["workload__task_id"], "scenario": e["workload__scenario"],
             "benchmark": e["workload__benchmark"] or None, "perturbation": e["workload__perturbation"] or "none"}
            for e in Episode.objects.filter(evaluation=evaluation).values(
                "status", "success", "reward", "steps", "success_source", "workload__model_ref", "workload__env_ref",
                "workload__task_id", "workload__scenario", "workload__benchmark", "workload__perturbation")]


@pytest.mark.django_db
def test_database_aggregate_scores_equal_row_by_row_scores(tenant_a):
    evaluation = finished(tenant_a, models=("prebuilt/classic-control-heuristics", "prebuilt/random"),
                          task_ids=("classic/CartPole-v1", "classic/Acrobot-v1"))
    # Every kind of episode: judged and not, rewarded and not, errors, one workload with a single episode and one
    # with none, two success sources in one workload.
    kinds = [("completed", True, 1.5, "criterion"), ("completed", False, -0.25, "env"), ("completed", None, 3.0, ""),
             ("completed", True, None, "judge"), ("error", None, None, "")]
    plan = {0: kinds * 3, 1: kinds[:1], 2: kinds[1:] * 2}
    for workload in evaluation.workloads.order_by("index"):
        Episode.objects.bulk_create(
            Episode(evaluation=evaluation, workload=workload, index=i, seed=i, status=status, success=success,
                    reward=reward, steps=7 + i, success_source=source,
                    stop_condition="error" if status == "error" else "terminated")
            for i, (status, success, reward, source) in enumerate(plan.get(workload.index, [])))
    rows = _rows(evaluation)
    for group_by in scoring.GROUP_FIELDS:
        from_db = reports.evaluation_scores(evaluation, group_by)["groups"]
        assert_close(from_db, scoring.group_scores(rows, group_by), group_by)
    # one cell per workload and success source (4 + 1 + 3); the workload without episodes has none
    assert len(reports.score_cells(evaluation)) == 8
