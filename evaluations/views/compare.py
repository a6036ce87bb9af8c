"""The compare view: with two sides (A and B, each one model of one evaluation) the paired comparison — Δ per task with
intervals, p-values, verdicts and a forest plot; with any set of evaluations the models × tasks success matrix, best
per column highlighted."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..reports import charts
from ..choices import TERMINAL_STATUSES
from ..reports.comparisons import ALPHA, Side, SideError, compare_sides, parse_alpha, resolve_side
from ..reports.reproduction import reproduction_rows
from ..domain import scoring
from ..models import Evaluation, Workload
from ..reports.scores import score_cells, task_label
from ..tenancy import active_organization

_MODELS = Prefetch("workloads",
                   queryset=Workload.objects.only("id", "evaluation_id", "index", "model_ref").order_by("index"))


def _models(evaluation: Evaluation) -> list[str]:
    return list(dict.fromkeys(w.model_ref for w in evaluation.workloads.all()))


def _matrix_context(chosen: list[Evaluation]) -> dict:
    """Models × tasks success rates across ``chosen``, best per column highlighted, and their bar chart."""
    cells = []
    for evaluation in chosen:
        # One row per model *of each evaluation*, so two runs of the same model stay apart.
        label = evaluation.label or evaluation.public_id
        for c in score_cells(evaluation):
            model = f"{c['model']} · {label}" if len(chosen) > 1 else c["model"]
            cells.append({**c, "model": model, "taskId": f"{c['env']} · {task_label(c)}", "env": "", "perturbation": ""})
    groups = scoring.group_cells(cells, "task")
    models = list(dict.fromkeys(g["key"]["model"] for g in groups))
    tasks = list(dict.fromkeys(g["key"]["taskId"] for g in groups))
    cell = {(g["key"]["model"], g["key"]["taskId"]): g for g in groups}
    best = {}
    for t in tasks:
        rates = [cell[(m, t)]["successRate"] for m in models if (m, t) in cell and cell[(m, t)]["successRate"] is not None]
        best[t] = max(rates) if rates else None
    matrix = [{"model": m, "cells": [{"group": cell.get((m, t)), "best": (m, t) in cell and cell[(m, t)]["successRate"] == best[t]}
                                     for t in tasks]} for m in models]
    chart = charts.success_bars(
        [{**g, "key": {"model": g["key"]["model"], "task": g["key"]["taskId"]}} for g in groups],
        label_fields=["task"], title="Success rate per task (95% Wilson interval)",
    ) if groups else None
    return {"tasks": tasks, "matrix": matrix, "chart": chart}


def _sides(request: HttpRequest, org, chosen: list[Evaluation]) -> tuple[list[Side], dict[str, str]]:
    """The two sides to compare: ``?a=&b=`` when given, else the chosen evaluations when they hold exactly two
    models between them (two single-model evaluations, older as A; or one evaluation's two models). Returns the
    sides found and an error message per side parameter that names nothing comparable."""
    if "a" in request.GET or "b" in request.GET:
        sides, problems = [], {}
        for param in ("a", "b"):
            try:
                sides.append(resolve_side(org, param, request.GET.get(param)))
            except SideError as exc:
                problems[param] = str(exc)
        return (sides if not problems else []), problems
    ordered = sorted(chosen, key=lambda e: (e.created_at, e.pk))
    sides = [Side(e, m, tuple(_models(e))) for e in ordered for m in _models(e)]
    return (sides if len(sides) == 2 else []), {}


def _forest_rows(comparison: dict) -> tuple[list[dict], str]:
    """Forest-plot rows (per task, then overall) on success when any pair has it, else on returns."""
    key = "success" if comparison["overall"]["success"]["n"] else "return"
    diff, ci = ("difference", "differenceCi") if key == "success" else ("meanDifference", "meanDifferenceCi")
    labels = [t["taskId"] + ("" if t["perturbation"] == "none" else f" · {t['perturbation']}")
              for t in comparison["tasks"]]
    if len(set(labels)) < len(labels):  # the same taskId on two envs: name the env too
        labels = [f"{t['env']} · {label}" for t, label in zip(comparison["tasks"], labels)]
    rows = []
    for label, t in zip([*labels, "overall"], [*comparison["tasks"], comparison["overall"]]):
        interval = t[key][ci] or [None, None]
        rows.append({"label": label, "difference": t[key][diff], "low": interval[0], "high": interval[1],
                     "verdict": t["verdict"], "overall": label == "overall"})
    x_title = ("Δ success rate, B − A (95% Newcombe interval)" if key == "success"
               else "Δ mean return, B − A (95% t interval)")
    return rows, x_title


def _paired_context(sides: list[Side], alpha: float) -> dict:
    if len(sides) != 2:
        return {"comparison": None}
    comparison = compare_sides(*sides, alpha=alpha)
    rows, x_title = _forest_rows(comparison)
    forest = charts.forest_plot(rows, title="B − A per task", x_title=x_title) if comparison["paired"] else None
    return {"comparison": comparison, "forest": forest, "forest_basis": x_title}


@login_required
@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    """Two sides: their paired comparison; several evaluations: models × tasks success rates."""
    org = active_organization(request)
    ids = [i for raw in request.GET.getlist("evaluations") for i in raw.split(",") if i]
    chosen = list(Evaluation.objects.for_org(org).filter(public_id__in=ids).prefetch_related(_MODELS))
    sides, side_errors = _sides(request, org, chosen)
    try:  # as the API reads it; a bad value is said on the page, not silently replaced by the default
        alpha = parse_alpha(request.GET.get("alpha"))
    except ValueError as exc:
        side_errors["alpha"] = f"{request.GET['alpha'][:50]} {exc}"
        alpha, sides = ALPHA, []
    if not chosen and sides:
        chosen = list({s.evaluation.pk: s.evaluation for s in sides}.values())
    recent = list(Evaluation.objects.for_org(org).filter(status__in=TERMINAL_STATUSES).order_by("-created_at")
                  .prefetch_related(_MODELS)[:50])
    context = {
        "chosen": chosen,
        "chosen_ids": [e.public_id for e in chosen],
        "recent": recent,
        "side_choices": [{"evaluation": e, "options": [(f"{e.public_id}:{m}", m) for m in _models(e)]} for e in recent],
        # Each select shows what is compared (``eval:model`` even when ``?a=eval`` named the only model).
        "side_params": [("a", "A (reference)", sides[0].reference if sides else request.GET.get("a", "")),
                        ("b", "B (challenger)", sides[1].reference if sides else request.GET.get("b", ""))],
        "side_errors": side_errors,
        **_paired_context(sides, alpha),
        **_matrix_context(chosen),
        "reproduction": [{"evaluation": e.public_id, **row} for e in chosen for row in reproduction_rows(e)],
    }
    return render(request, "evaluations/compare.html", context)
