"""Reproduction verdicts on read: every (model, benchmark) score of an evaluation whose model has a published number
(``models.PublishedScore``) is set against it (``domain.reproduction``)."""

from __future__ import annotations

from ..domain.reproduction import TOLERANCE, reproduction_verdict
from ..domain.scoring import group_cells
from ..models import Evaluation, PublishedScore
from ..models.published import model_key
from .scores import score_cells

__all__ = ["reference_of", "reproduction_rows", "with_references"]


def reference_of(row: PublishedScore | None, successes: int, judged: int) -> dict | None:
    """The ``reference`` extension of one score group: the published value and its source, ours (successes of judged
    and the Wilson interval) and the verdict with the episodes that would decide; None without a published row or
    without a judged episode."""
    if row is None or not judged:
        return None
    verdict = reproduction_verdict(row.success_rate, successes, judged)
    return {"published": row.success_rate, "publishedEpisodes": row.episodes, "source": row.source,
            "scope": "organization" if row.organization_id else "catalog" if row.builtin else "operator",
            "successes": successes, "judged": judged, "successRate": successes / judged,
            "successRateCi": verdict["interval"], "verdict": verdict["verdict"], "tolerance": TOLERANCE,
            "episodesToDecide": verdict["episodesToDecide"], "moreEpisodes": verdict["moreEpisodes"]}


def with_references(groups: list[dict], evaluation: Evaluation) -> list[dict]:
    """``groups`` of a ``groupBy=benchmark`` rollup, each with its ``reference`` (:func:`reference_of`; null when the
    model has no published number for that benchmark)."""
    published = PublishedScore.objects.for_models(evaluation.organization_id, {g["key"]["model"] for g in groups})
    for g in groups:
        row = published.get((model_key(g["key"]["model"]), g["key"]["benchmark"] or ""))
        judged = g["episodes"] - g["successUndefined"]
        g["reference"] = reference_of(row, g["successes"], judged)
    return groups


def reproduction_rows(evaluation: Evaluation, cells: list[dict] | None = None) -> list[dict]:
    """The evaluation's (model, benchmark) scores that have a published number: ``[{"model", "benchmark",
    **reference}]`` in score order (the dashboard's table and the exported bundle). ``cells``: its
    ``score_cells`` when the caller has them (one query fewer); nothing is queried for an evaluation without any."""
    cells = score_cells(evaluation) if cells is None else cells
    if not cells:
        return []
    groups = with_references(group_cells(cells, "benchmark"), evaluation)
    return [{"model": g["key"]["model"], "benchmark": g["key"]["benchmark"], **g["reference"]}
            for g in groups if g["reference"]]
