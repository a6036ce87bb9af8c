"""Size limits of a request, counted before any per-model or per-task work.

A request over a limit is refused from its raw shape alone (list lengths and the integers it spells out), so
refusing it costs microseconds however many entries it lists: a field case, one model × 12,000 tasks, was
refused for its 12,000 workloads only after 21 s of schema and task checks (150 s each for six at once).

The limits (settings, see ``rlmesh_site/settings.py``):

- ``RLMESH_MAX_WORKLOADS_PER_EVALUATION``: models × tasks (``/v1``), path ``tasks``;
- ``RLMESH_MAX_EPISODES_PER_EVALUATION``: the sum of the tasks' ``episodes`` × models (``/v1``), path ``tasks``;
  task ids × ``rollouts_per_example`` (the agents API), path ``rollouts_per_example``;
- ``RLMESH_MAX_EPISODES_PER_TASK`` and ``RLMESH_MAX_WORKERS_PER_TASK``: per task (checked with the task itself,
  and cheap: they never multiply);
- ``MAX_TASK_IDS``: task ids of an agent run, path ``task_ids``.

Values of the wrong type are not counted here (the schema check names them afterwards).
"""

from __future__ import annotations

from django.conf import settings

from .agent_schema import MAX_TASK_IDS
from .parse import RequestInvalid

__all__ = ["agent_run_size_errors", "evaluation_caps", "refuse_oversized_agent_run", "refuse_oversized_evaluation",
           "request_counts"]


def _count(value) -> int | None:
    """A whole number as the request spells it (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def evaluation_caps(models: int, tasks: int, episodes: int) -> list[dict]:
    """The evaluation-wide caps for ``models`` × ``tasks`` workloads and ``episodes`` episodes per model (the sum of
    the tasks' episodes): problems at path ``tasks``."""
    errors = []
    workloads = models * tasks
    if workloads > settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION:
        errors.append({"path": "tasks", "message": f"{models} models × {tasks} tasks = {workloads} workloads; "
                       f"at most {settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION} per evaluation"})
    total = episodes * max(1, models)
    if total > settings.RLMESH_MAX_EPISODES_PER_EVALUATION:
        errors.append({"path": "tasks", "message": f"{total} episodes in total; at most "
                       f"{settings.RLMESH_MAX_EPISODES_PER_EVALUATION} per evaluation"})
    return errors


def request_counts(data: dict) -> tuple[int, int, int]:
    """``(models, tasks, episodes per model)`` of a ``/v1`` request (parsed, not yet validated) as it spells them:
    ``models`` entries (or 1 for ``model``), ``tasks`` entries, the sum of the tasks' whole-number ``episodes``."""
    tasks = data.get("tasks")
    tasks = tasks if isinstance(tasks, list) else []
    models = data.get("models")
    n_models = len(models) if isinstance(models, list) else int("model" in data)
    episodes = sum(n for t in tasks if isinstance(t, dict) and (n := _count(t.get("episodes"))) and n > 0)
    return n_models, len(tasks), episodes


def refuse_oversized_evaluation(data: dict) -> None:
    """Raise RequestInvalid when a ``/v1`` request (parsed, not yet validated) is over the workload or episode caps
    by its counts alone (:func:`request_counts`)."""
    errors = evaluation_caps(*request_counts(data))
    if errors:
        raise RequestInvalid(errors)


def agent_run_size_errors(task_ids: int, rollouts: int) -> list[dict]:
    """Problems of an agent run of ``task_ids`` task ids × ``rollouts`` rollouts each."""
    errors = []
    if task_ids > MAX_TASK_IDS:
        errors.append({"path": "task_ids", "message": f"at most {MAX_TASK_IDS} task ids"})
    if rollouts > settings.RLMESH_MAX_EPISODES_PER_TASK:
        errors.append({"path": "rollouts_per_example",
                       "message": f"at most {settings.RLMESH_MAX_EPISODES_PER_TASK} rollouts per task"})
    elif rollouts * task_ids > settings.RLMESH_MAX_EPISODES_PER_EVALUATION:
        errors.append({"path": "rollouts_per_example", "message": f"{rollouts} × {task_ids} tasks = "
                       f"{rollouts * task_ids} rollouts; at most {settings.RLMESH_MAX_EPISODES_PER_EVALUATION} a run"})
    return errors


def refuse_oversized_agent_run(data: dict) -> None:
    """Raise RequestInvalid when an agent run request (parsed, not yet validated) lists more task ids, or asks for
    more rollouts, than the limits allow (``rollouts_per_example`` defaults to 1)."""
    ids = data.get("task_ids")
    rollouts = _count(data.get("rollouts_per_example", 1)) or 1
    errors = agent_run_size_errors(len(ids) if isinstance(ids, list) else 0, rollouts)
    if errors:
        raise RequestInvalid(errors)
