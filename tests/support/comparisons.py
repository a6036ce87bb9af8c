"""Seeded evaluations for comparison, baseline and regression tests: finished evaluations whose episodes realise a
chosen table of outcomes per seed."""

from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from evaluations.choices import EvaluationStatus
from evaluations.models import Episode, Evaluation
from evaluations.planning import plan_evaluation
from evaluations.runs.lifecycle import create_evaluation
from tests.conftest import cartpole_request

HEURISTICS = "prebuilt/classic-control-heuristics"
RANDOM = "prebuilt/random"


def finished(tenant, *, models=(HEURISTICS,), tags=None, status=EvaluationStatus.COMPLETED, name="", age_minutes=0,
             task_ids=("classic/CartPole-v1",)) -> Evaluation:
    """A finished evaluation (no episodes yet) of ``models`` on CartPole-like tasks, created ``age_minutes`` ago."""
    body = cartpole_request(models=list(models), name=name, tags=dict(tags or {}))
    body["tasks"] = [{**body["tasks"][0], "taskId": t} for t in task_ids]
    evaluation = create_evaluation(plan=plan_evaluation(body, organization=tenant.org), raw_body=json.dumps(body),
                                   organization=tenant.org, creator=tenant.user)
    created = timezone.now() - timedelta(minutes=age_minutes)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=status, created_at=created, finished_at=timezone.now())
    evaluation.refresh_from_db()
    return evaluation


def add_outcomes(evaluation: Evaluation, outcomes, *, model: str | None = None, task_id: str | None = None) -> None:
    """Episodes of one workload (the model's, on ``task_id``; the first by default): ``outcomes`` is a list of
    ``(seed, success)`` (reward 1.0/0.0 follows success) or ``(seed, "error")``."""
    workloads = evaluation.workloads.all()
    if model:
        workloads = workloads.filter(model_ref=model)
    if task_id:
        workloads = workloads.filter(task_id=task_id)
    workload = workloads.first()
    start = Episode.objects.filter(workload=workload).count()
    Episode.objects.bulk_create(
        Episode(evaluation=evaluation, workload=workload, index=start + i, seed=seed,
                status="error" if success == "error" else "completed",
                success=None if success == "error" else success,
                reward=None if success == "error" else float(success), steps=10,
                success_source="" if success == "error" else "criterion",
                stop_condition="error" if success == "error" else "terminated")
        for i, (seed, success) in enumerate(outcomes)
    )


def table(both: int, a_only: int, b_only: int, neither: int, start: int = 0) -> tuple[list, list]:
    """A's and B's ``(seed, success)`` realising a 2×2 table of paired outcomes, seeds from ``start``."""
    cells = [(True, True)] * both + [(True, False)] * a_only + [(False, True)] * b_only + [(False, False)] * neither
    return ([(start + i, a) for i, (a, _) in enumerate(cells)], [(start + i, b) for i, (_, b) in enumerate(cells)])


def rate(success_rate: float, n: int, start: int = 0) -> list:
    """``n`` episodes, seeds from ``start``, the first ``round(success_rate·n)`` successful."""
    k = round(success_rate * n)
    return [(start + i, i < k) for i in range(n)]
