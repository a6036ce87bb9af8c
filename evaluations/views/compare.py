"""The compare view: models × tasks success rates across chosen evaluations, best per column highlighted."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .. import charts
from ..choices import TERMINAL_STATUSES
from ..domain import scoring
from ..models import Evaluation
from ..reports import episode_rows, task_label
from ..tenancy import active_organization


@login_required
@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    """Models × tasks success rates across the chosen evaluations; best per column highlighted."""
    org = active_organization(request)
    ids = [i for raw in request.GET.getlist("evaluations") for i in raw.split(",") if i]
    chosen = list(Evaluation.objects.for_org(org).filter(public_id__in=ids))
    rows = []
    for evaluation in chosen:
        # One row per model *of each evaluation*, so two runs of the same model stay apart.
        label = evaluation.label or evaluation.public_id
        for r in episode_rows(evaluation):
            rows.append({**r, "model": f"{r['model']} · {label}" if len(chosen) > 1 else r["model"], "task": f"{r['env']} · {task_label(r)}"})
    groups = scoring.group_scores([{**r, "taskId": r["task"], "env": "", "perturbation": ""} for r in rows], "task")
    models = list(dict.fromkeys(g["key"]["model"] for g in groups))
    tasks = list(dict.fromkeys(g["key"]["taskId"] for g in groups))
    cell = {(g["key"]["model"], g["key"]["taskId"]): g for g in groups}
    best = {}
    for t in tasks:
        rates = [cell[(m, t)]["successRate"] for m in models if (m, t) in cell and cell[(m, t)]["successRate"] is not None]
        best[t] = max(rates) if rates else None
    matrix = [{"model": m, "cells": [{"group": cell.get((m, t)), "best": (m, t) in cell and cell[(m, t)]["successRate"] == best[t]} for t in tasks]} for m in models]
    recent = Evaluation.objects.for_org(org).filter(
        status__in=TERMINAL_STATUSES
    ).order_by("-created_at")[:50]
    context = {
        "chosen": chosen,
        "chosen_ids": [e.public_id for e in chosen],
        "recent": recent,
        "tasks": tasks,
        "matrix": matrix,
        "chart": charts.success_bars(
            [{**g, "key": {"model": g["key"]["model"], "task": g["key"]["taskId"]}} for g in groups],
            label_fields=["task"], title="Success rate per task (95% Wilson interval)",
        ) if groups else None,
    }
    return render(request, "evaluations/compare.html", context)
