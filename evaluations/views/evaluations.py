"""The evaluations list and an evaluation's detail page (tabs Overview, Episodes, Configuration, Logs; live progress;
cancel; the raw request as a download; episode videos)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST, require_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import JsonLexer

from ..reports import charts
from ..choices import ACTIVE_STATUSES, WRITE_ROLES, EpisodeStatus, EvaluationStatus, cancel_refusal, may_cancel
from ..domain import scoring
from ..filtersets import EpisodeFilterSet, EvaluationFilterSet
from ..forms import EPISODE_SORTS, catalog_choices
from ..htmx import is_partial, render_page_or_partial
from ..media import episode_video_response
from ..models import Episode, Evaluation, Workload
from ..planning import no_worker_warning
from ..reports.regressions import attach_regressions
from ..reports.reproduction import reproduction_rows
from ..reports.scores import evaluation_metrics, performance_profiles, score_cells, task_label
from ..runs.lifecycle import CancelRefused, cancel_evaluation
from ..selectors import evaluation_detail_queryset
from ..tenancy import active_membership, active_organization, org_evaluation
from .agents import agent_overview
from .datasets import dataset_panel_context

TABS = ("overview", "episodes", "configuration", "logs")


def home(request: HttpRequest) -> HttpResponse:
    return redirect("evaluations:evaluation_list")


def _headline(evaluations: list[Evaluation]) -> None:
    """Attach ``headlines`` to each evaluation, in one query: per model (models are never pooled together), the
    success rate over its tasks and its Wilson interval, ``[{"model", "rate", "low", "high", "n"}]`` in model order."""
    stats: dict[int, list[dict]] = {}
    # Episodes without a verdict (success undefined, unverified rollouts) are no outcome of the success rate.
    for row in (Episode.objects.filter(evaluation__in=evaluations, status=EpisodeStatus.COMPLETED, success__isnull=False)
                .values("evaluation_id", "workload__model_ref")
                .annotate(n=Count("id"), successes=Count("id", filter=Q(success=True)))
                .order_by("evaluation_id", "workload__model_ref")):
        low, high = scoring.wilson_interval(row["successes"], row["n"])
        stats.setdefault(row["evaluation_id"], []).append(
            {"model": row["workload__model_ref"], "rate": row["successes"] / row["n"], "low": low, "high": high,
             "n": row["n"]})
    for e in evaluations:
        e.headlines = stats.get(e.pk, [])
        refs = list(e.workloads.all())
        e.model_refs = sorted({w.model_ref for w in refs})
        e.env_refs = sorted({w.env_ref for w in refs})


@login_required
@require_GET
def evaluation_list(request: HttpRequest) -> HttpResponse:
    org = active_organization(request)
    base = Evaluation.objects.for_org(org).select_related("creator")
    filterset = EvaluationFilterSet(request.GET, queryset=base)
    qs = filterset.qs if filterset.is_valid() else base.none()
    qs = qs.order_by("-created_at", "-id").prefetch_related(
        Prefetch("workloads", queryset=Workload.objects.only("id", "evaluation_id", "model_ref", "env_ref"))
    )
    page = Paginator(qs, 25).get_page(request.GET.get("page"))
    evaluations = list(page.object_list)
    _headline(evaluations)
    attach_regressions(evaluations, org)  # no query unless an evaluation on the page carries a tag
    models, envs, _ = catalog_choices(org)
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "evaluations": evaluations,
        "page": page,
        "filterset": filterset,
        "filter_errors": filterset.errors if not filterset.is_bound or not filterset.is_valid() else {},
        "statuses": EvaluationStatus.values,
        "model_choices": [m for m, _ in models],
        "env_choices": [e for e, _ in envs],
        "query": query.urlencode(),
        "any_active": any(e.status in ACTIVE_STATUSES for e in evaluations),
        "can_write": active_membership(request).role in WRITE_ROLES,
    }
    return render_page_or_partial(request, "evaluations/evaluation_list.html", "results", context)


def _overview_context(request: HttpRequest, evaluation: Evaluation) -> dict:
    group_by = request.GET.get("groupBy", "task")
    if group_by not in scoring.GROUP_FIELDS:
        group_by = "task"
    cells = score_cells(evaluation)
    groups = scoring.group_cells(cells, group_by)
    perturbed = any(c["perturbation"] != "none" for c in cells)
    label_fields = [f for f in scoring.GROUP_FIELDS[group_by] if f != "model" and (perturbed or f != "perturbation" or group_by == "perturbation")]
    # The return distribution chart is the one view that needs every episode's return.
    rewards: dict[str, list[float]] = {}
    for model, reward in (Episode.objects.filter(evaluation=evaluation, status=EpisodeStatus.COMPLETED,
                                                 reward__isnull=False)
                          .order_by("workload__index", "index").values_list("workload__model_ref", "reward")):
        rewards.setdefault(model, []).append(reward)
    models = list(dict.fromkeys(c["model"] for c in cells))
    tasks = list(dict.fromkeys(task_label(c) for c in cells))
    matrix = None
    if len(models) > 1 and len(tasks) > 1:
        by_task = {(g["key"]["model"], task_label(g["key"])): g for g in scoring.group_cells(cells, "task")}
        matrix = {"tasks": tasks, "rows": [{"model": m, "cells": [by_task.get((m, t)) for t in tasks]} for m in models]}
    attach_regressions([evaluation], active_organization(request))
    # The rliable profile reads best over many tasks: on the benchmark rollup, or whenever there are three or more.
    profiles = performance_profiles(cells) if group_by == "benchmark" or len(tasks) >= 3 else {}
    duration = None
    if evaluation.started_at:
        duration = (evaluation.finished_at or timezone.now()) - evaluation.started_at
    return {
        "group_by": group_by,
        "group_choices": list(scoring.GROUP_FIELDS),
        "groups": groups,
        "label_fields": label_fields,
        "success_chart": charts.success_bars(groups, label_fields=label_fields, title=f"Success rate by {group_by} (95% Wilson interval)") if groups else None,
        "reward_chart": charts.reward_distribution(rewards) if rewards else None,
        "matrix": matrix,
        "duration": duration,
        "profile_chart": charts.performance_profile(
            profiles, title="Performance profile: fraction of tasks above each success rate (95% bootstrap band)",
        ) if profiles else None,
        "reproduction": reproduction_rows(evaluation, cells),
        # Where the time went (the /metrics rollup): once something has finished.
        "throughput": evaluation_metrics(evaluation) if groups else None,
        "baseline_controls": [
            {"tag": f"{k}:{v}", "baseline": evaluation.tag_baselines.get(f"{k}:{v}")}
            for k, v in evaluation.tags.items()
        ],
    }


def _episodes_context(request: HttpRequest, evaluation: Evaluation) -> dict:
    filterset = EpisodeFilterSet(request.GET, queryset=evaluation.episodes.select_related("workload__env_version"))
    qs = filterset.qs if filterset.is_valid() else evaluation.episodes.none()
    sort = request.GET.get("sort", "index")
    qs = qs.order_by(*EPISODE_SORTS.get(sort, EPISODE_SORTS["index"]))
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    workloads = list(evaluation.workloads.all())
    query = request.GET.copy()
    query.pop("page", None)
    return {
        "episodes_page": page,
        "show": request.GET.get("show") or "all",
        "task": request.GET.get("task", ""),
        "model": request.GET.get("model", ""),
        "sort": sort,
        "task_choices": sorted({w.task_id for w in workloads}),
        "model_choices": sorted({w.model_ref for w in workloads}),
        "episode_query": query.urlencode(),
        **dataset_panel_context(request, evaluation, workloads),
    }


def formatted_request(raw: str) -> str | None:
    """The raw request indented (2 spaces, keys in their order, numbers exactly as sent: Python's json keeps
    integers of any size), or None when it is already exactly that or is not JSON."""
    try:
        formatted = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        return None
    return None if formatted == raw else formatted


def _configuration_context(evaluation: Evaluation) -> dict:
    formatter = HtmlFormatter(nowrap=False, cssclass="highlight")
    formatted = formatted_request(evaluation.request_raw)
    return {
        # A compact request is one long line: show it formatted, with the exact bytes one click away.
        "formatted_request_html": highlight(formatted, JsonLexer(), formatter) if formatted else None,
        "raw_request_html": highlight(evaluation.request_raw, JsonLexer(), formatter),
        "config_html": highlight(json.dumps(evaluation.config, indent=2), JsonLexer(), formatter),
        "has_env_vars": any(m.get("envVars") or m.get("envVarsIgnored") for m in evaluation.config.get("models", [])),
    }


@login_required
@require_GET
def evaluation_detail(request: HttpRequest, public_id: str, tab: str = "overview") -> HttpResponse:
    if tab not in TABS:
        raise Http404("no such tab")
    evaluation = org_evaluation(request, public_id, evaluation_detail_queryset())
    role = active_membership(request).role
    context = {
        "evaluation": evaluation,
        "tab": tab,
        "tabs": TABS,
        "can_write": role in WRITE_ROLES,
        "can_cancel": may_cancel(role=role, user=request.user, evaluation=evaluation),
        "no_worker": _no_worker(evaluation),
    }
    if tab == "overview":
        context.update(_overview_context(request, evaluation), **agent_overview(evaluation))
    elif tab == "episodes":
        context.update(_episodes_context(request, evaluation))
    elif tab == "configuration":
        context.update(_configuration_context(evaluation))
    else:
        context["logs"] = evaluation.logs.order_by("id")[:2000]
    return render_page_or_partial(request, "evaluations/evaluation_detail.html", f"tab-{tab}", context)


@login_required
@require_safe
def episode_video(request: HttpRequest, public_id: str, episode_id: int) -> HttpResponse:
    """The episode's MP4, with range requests (the Episodes tab's inline player seeks through it)."""
    return episode_video_response(request, org_evaluation(request, public_id, Evaluation.objects.all()), episode_id)


@login_required
@require_GET
def evaluation_progress(request: HttpRequest, public_id: str) -> HttpResponse:
    """The live status block of the detail page; polls itself until the evaluation is terminal."""
    return _render_progress(request, org_evaluation(request, public_id, evaluation_detail_queryset()))


def _no_worker(evaluation: Evaluation) -> str | None:
    """For an evaluation still to run: the warning that no worker is alive to run it (else None), so a page does
    not show "running" for ever without saying why nothing moves."""
    return None if evaluation.is_terminal else no_worker_warning()


def _render_progress(request: HttpRequest, evaluation: Evaluation) -> HttpResponse:
    role = active_membership(request).role
    context = {"evaluation": evaluation, "can_cancel": may_cancel(role=role, user=request.user, evaluation=evaluation),
               "no_worker": _no_worker(evaluation)}
    response = render(request, "evaluations/evaluation_detail.html#progress", context)
    if evaluation.is_terminal and request.GET.get("was") in ACTIVE_STATUSES:
        # The status changed under the page: reload so scores and charts show the final numbers.
        response["HX-Refresh"] = "true"
    return response


@login_required
@require_POST
def evaluation_cancel(request: HttpRequest, public_id: str) -> HttpResponse:
    evaluation = org_evaluation(request, public_id)
    role = active_membership(request).role
    if not may_cancel(role=role, user=request.user, evaluation=evaluation):
        return HttpResponse(cancel_refusal(role), status=403)
    try:
        cancel_evaluation(evaluation)
    except CancelRefused as exc:
        messages.info(request, str(exc))
    if is_partial(request):
        return _render_progress(request, org_evaluation(request, public_id, evaluation_detail_queryset()))
    return redirect(evaluation.get_absolute_url())


@login_required
@require_GET
def evaluation_request_download(request: HttpRequest, public_id: str) -> HttpResponse:
    """The raw request exactly as submitted, as a download."""
    evaluation = org_evaluation(request, public_id)
    response = HttpResponse(evaluation.request_raw.encode("utf-8"), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{evaluation.public_id}-request.json"'
    return response
