"""Evaluations run inline in a test (no Celery): made from a request, their shards run one after another by the shard
loop against real rlmesh servers, their episodes read back. The shard loop's heartbeat is slowed for every test
(``tests/conftest.py``)."""

from __future__ import annotations

from evaluations.models import Episode, Evaluation, Shard
from evaluations.planning import plan_evaluation
from evaluations.runs import lifecycle
from evaluations.runs import loop

__all__ = ["create", "episodes", "run_all"]


def create(tenant, body: dict) -> Evaluation:
    """The evaluation ``body`` asks for, planned and written for ``tenant`` (its shards queued, none sent)."""
    plan = plan_evaluation(body, organization=tenant.org)
    return lifecycle.create_evaluation(plan=plan, raw_body="{}", organization=tenant.org, creator=tenant.user)


def run_all(evaluation: Evaluation) -> None:
    """Run every shard of ``evaluation`` in this process, in order; the evaluation refreshed."""
    for shard_id in Shard.objects.filter(evaluation=evaluation).order_by("pk").values_list("pk", flat=True):
        loop.run_shard(shard_id)
    evaluation.refresh_from_db()


def episodes(evaluation: Evaluation) -> list[Episode]:
    """The evaluation's episodes by workload, then index."""
    return list(Episode.objects.filter(evaluation=evaluation).order_by("workload__index", "index"))
