"""Paired comparisons read from the database: a *side* is one model of one evaluation, its episodes become the rows
``domain.comparisons`` pairs on (task, perturbation, seed). Queries here, statistics there.

A row's ``task`` is ``<env reference>/<taskId>`` (the same identifier in any evaluation that ran that env's task),
its ``perturbation`` the workload's label (``"none"`` when unperturbed, as in scores), its ``seed`` the episode seed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..domain import comparisons
from ..domain.numbers import decimal_number
from ..models import Episode, Evaluation, Organization

__all__ = [
    "ALPHA",
    "Side",
    "SideError",
    "annotate_tasks",
    "compare_sides",
    "parse_alpha",
    "parse_side",
    "resolve_side",
    "rows_by_evaluation",
    "side_rows",
]

#: The family-wise error rate of verdicts unless a caller asks for another (``?alpha=``).
ALPHA = 0.05


def parse_alpha(raw: str | None) -> float:
    """The significance level a comparison's ``alpha`` names: :data:`ALPHA` when absent or empty, else a plain
    decimal in (0, 0.5] (``domain.numbers.decimal_number``); ValueError saying the range otherwise."""
    if raw is None or raw == "":
        return ALPHA
    alpha = decimal_number(raw)
    if alpha is None or not 0 < alpha <= 0.5:
        raise ValueError("must be a number in (0, 0.5]")
    return alpha

_ROW_FIELDS = ("seed", "status", "success", "reward", "workload__model_ref", "workload__env_ref", "workload__task_id",
               "workload__perturbation")


@dataclass(frozen=True)
class Side:
    """One model of one evaluation: what ``a`` or ``b`` of a comparison names."""

    evaluation: Evaluation
    model: str
    #: Every model of the evaluation, in workload order (the dashboard offers them).
    models: tuple[str, ...] = ()

    @property
    def reference(self) -> str:
        """``eval_…:<model>``: the value that names this side in ``?a=``/``?b=``."""
        return f"{self.evaluation.public_id}:{self.model}"

    def describe(self) -> dict:
        return {"evaluation": self.evaluation.public_id, "model": self.model, "name": self.evaluation.label,
                "status": self.evaluation.status}


class SideError(Exception):
    """A side that cannot be compared. ``param`` names the query parameter (``a`` or ``b``); ``not_found`` is True when
    the evaluation does not exist in the caller's organization (a 404, like every other resource)."""

    def __init__(self, param: str, message: str, *, not_found: bool = False):
        super().__init__(message)
        self.param = param
        self.not_found = not_found


def parse_side(value: str) -> tuple[str, str | None]:
    """``eval_…`` → (id, None); ``eval_…:<model reference>`` → (id, model). Model references may hold colons
    (``repo:tag``): only the first one separates."""
    public_id, sep, model = value.partition(":")
    return public_id, (model if sep else None)


def resolve_side(organization: Organization, param: str, value: str | None) -> Side:
    """The side ``value`` names in ``organization``: 2 queries (the evaluation, its models).

    Raises SideError: a missing or malformed value, an evaluation with several models and none named, or a model it
    did not run (400s naming ``param``); an evaluation absent from the organization (``not_found``)."""
    if not value or not value.strip():
        raise SideError(param, f"`{param}` is required: eval_… (an evaluation with one model) or eval_…:<model>")
    public_id, model = parse_side(value.strip())
    evaluation = None
    if public_id and "\x00" not in value:
        evaluation = Evaluation.objects.for_org(organization).filter(public_id=public_id).first()
    if evaluation is None:
        raise SideError(param, f"evaluation {public_id} not found", not_found=True)
    models = tuple(dict.fromkeys(evaluation.workloads.order_by("index").values_list("model_ref", flat=True)))
    if model is None:
        if len(models) != 1:
            listed = ", ".join(models) or "none"
            raise SideError(param, f"evaluation {public_id} has {len(models)} models ({listed}): name one as "
                                   f"{public_id}:<model>")
        model = models[0]
    elif model not in models:
        listed = ", ".join(models) or "none"
        raise SideError(param, f"evaluation {public_id} has no model {model!r}; its models: {listed}")
    return Side(evaluation, model, models)


def _row(values: tuple) -> dict:
    seed, status, success, reward, model, env, task_id, perturbation = values
    return {"task": f"{env}/{task_id}", "env": env, "taskId": task_id, "perturbation": perturbation or "none",
            "seed": seed, "status": status, "success": success, "reward": reward, "model": model}


def side_rows(side: Side) -> list[dict]:
    """The side's episodes as comparison rows, in workload and index order (one query)."""
    qs = Episode.objects.filter(evaluation=side.evaluation, workload__model_ref=side.model)
    return [_row(v) for v in qs.values_list(*_ROW_FIELDS)]


def rows_by_evaluation(evaluation_ids: Iterable[int]) -> dict[int, dict[str, list[dict]]]:
    """Comparison rows of several evaluations at once (one query): ``{evaluation pk: {model: rows}}``."""
    out: dict[int, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    episodes = Episode.objects.filter(evaluation_id__in=list(evaluation_ids))
    for values in episodes.values_list("evaluation_id", *_ROW_FIELDS):
        row = _row(values[1:])
        out[values[0]][row["model"]].append(row)
    return out


def annotate_tasks(result: dict, labels: Mapping[str, Mapping]) -> dict:
    """Add each task's parts (``env``, ``taskId``, and ``model`` when the key names one) from ``labels``, a map of
    task key → those fields; ``compare`` keeps only the key."""
    for task in result["tasks"]:
        task.update(labels.get(task["task"], {}))
    return result


def compare_sides(a: Side, b: Side, *, alpha: float = ALPHA) -> dict:
    """Is B better than A on the episodes they share? :func:`evaluations.domain.comparisons.compare` of the two
    sides' rows (2 queries), with ``a``/``b`` described and each task's ``env``/``taskId``. Raises ValueError for an
    ``alpha`` outside (0, 1)."""
    a_rows, b_rows = side_rows(a), side_rows(b)
    labels = {r["task"]: {"env": r["env"], "taskId": r["taskId"]} for r in (*a_rows, *b_rows)}
    result = comparisons.compare(a_rows, b_rows, alpha=alpha)
    return {"a": a.describe(), "b": b.describe(), **annotate_tasks(result, labels)}
