"""Dashboard views: full pages plus htmx partials, scoped to the active organization.

Every write goes through the same services as the API (planning, create, cancel, keys).
"""

from __future__ import annotations

import json
from datetime import timedelta

from django.contrib import messages
from django.conf import settings
from django.contrib.auth import login as auth_login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import JsonLexer

from . import charts, scoring
from .choices import ACTIVE_STATUSES, ADMIN_ROLES, WRITE_ROLES, EpisodeStatus, EvaluationStatus, Role, cancel_refusal, may_cancel
from .filtersets import EvaluationFilterSet
from .forms import EPISODE_SORTS, ApiKeyForm, LaunchForm, catalog_choices
from .htmx import is_partial, render_page_or_partial
from .media import episode_video_response
from .models import ApiKey, Episode, Evaluation, ImageRepository, Invitation, Membership, Workload
from .reports import episode_rows
from .services.evaluations import CancelRefused, cancel_evaluation, create_evaluation
from .services.organizations import MembershipError, accept_invitation, change_role, create_invitation, find_invitation, remove_member
from .services.planning import RequestInvalid, parse_request_body, plan_evaluation

TABS = ("overview", "episodes", "configuration", "logs")


# ------------------------------------------------------------ organization
def memberships_of(request: HttpRequest) -> list[Membership]:
    if not hasattr(request, "_memberships"):
        request._memberships = list(
            Membership.objects.filter(user=request.user).select_related("organization").order_by("organization__name")
        )
    return request._memberships


def active_membership(request: HttpRequest) -> Membership:
    """The membership of the organization chosen in the header (session), else the first one; 404 if none."""
    memberships = memberships_of(request)
    if not memberships:
        raise NoOrganization()
    chosen = request.session.get("organization_id")
    return next((m for m in memberships if m.organization_id == chosen), memberships[0])


class NoOrganization(Http404):
    """The signed-in user belongs to no organization (rendered by NoOrganizationMiddleware)."""


def active_organization(request: HttpRequest):
    return active_membership(request).organization


def _org_evaluation(request: HttpRequest, public_id: str, queryset=None) -> Evaluation:
    """The active organization's evaluation; another organization's is a 404 like a missing one.

    When the user belongs to the evaluation's organization but another one is active (a link the CLI
    printed after ``rlmesh org switch``), the page switches to that organization and says so.
    """
    qs = queryset if queryset is not None else Evaluation.objects.select_related("creator")
    evaluation = qs.for_org(active_organization(request)).filter(public_id=public_id).first()
    if evaluation is None and request.method == "GET":
        mine = {m.organization_id: m for m in memberships_of(request)}
        evaluation = qs.filter(public_id=public_id, organization_id__in=list(mine)).first()
        if evaluation is not None:
            request.session["organization_id"] = evaluation.organization_id
            messages.info(request, f"Switched to {mine[evaluation.organization_id].organization.name}, where this evaluation belongs.")
    if evaluation is None:
        raise Http404(f"evaluation {public_id} not found")
    return evaluation


@login_required
@require_POST
def organization_switch(request: HttpRequest) -> HttpResponse:
    provider_id = request.POST.get("organization", "")
    if not provider_id:
        return HttpResponse("choose an organization (form field organization)", status=400)
    membership = next((m for m in memberships_of(request) if m.organization.provider_id == provider_id), None)
    if membership is None:
        raise Http404("no such organization")
    request.session["organization_id"] = membership.organization_id
    return redirect("evaluations:evaluation_list")


def home(request: HttpRequest) -> HttpResponse:
    return redirect("evaluations:evaluation_list")


# ------------------------------------------------------------- evaluations
def _headline(evaluations: list[Evaluation]) -> None:
    """Attach ``headline`` (overall success rate and Wilson interval) to each evaluation, in one query."""
    stats = {
        row["evaluation_id"]: row
        for row in Episode.objects.filter(evaluation__in=evaluations, status=EpisodeStatus.COMPLETED)
        .values("evaluation_id")
        .annotate(n=Count("id"), successes=Count("id", filter=Q(success=True)))
    }
    for e in evaluations:
        row = stats.get(e.pk)
        if row and row["n"]:
            low, high = scoring.wilson_interval(row["successes"], row["n"])
            e.headline = {"rate": row["successes"] / row["n"], "low": low, "high": high, "n": row["n"]}
        else:
            e.headline = None
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


def _detail_queryset():
    workloads = Workload.objects.select_related("model_version", "env_version").annotate(
        done=Count("episode_set"), errored=Count("episode_set", filter=Q(episode_set__status=EpisodeStatus.ERROR))
    )
    return Evaluation.objects.select_related("creator").prefetch_related(Prefetch("workloads", queryset=workloads))


def _task_label(row: dict) -> str:
    """A task's name in matrices: its taskId, plus the perturbation when there is one (sweeps stay apart)."""
    p = row.get("perturbation") or "none"
    return row["taskId"] if p == "none" else f"{row['taskId']} · {p}"


def _overview_context(request: HttpRequest, evaluation: Evaluation) -> dict:
    group_by = request.GET.get("groupBy", "task")
    if group_by not in scoring.GROUP_FIELDS:
        group_by = "task"
    rows = episode_rows(evaluation)
    groups = scoring.group_scores(rows, group_by)
    perturbed = any(r["perturbation"] != "none" for r in rows)
    label_fields = [f for f in scoring.GROUP_FIELDS[group_by] if f != "model" and (perturbed or f != "perturbation" or group_by == "perturbation")]
    rewards: dict[str, list[float]] = {}
    for r in rows:
        if r["status"] == EpisodeStatus.COMPLETED:
            rewards.setdefault(r["model"], []).append(r["reward"])
    models = list(dict.fromkeys(r["model"] for r in rows))
    tasks = list(dict.fromkeys(_task_label(r) for r in rows))
    matrix = None
    if len(models) > 1 and len(tasks) > 1:
        by_task = {(g["key"]["model"], _task_label(g["key"])): g for g in scoring.group_scores(rows, "task")}
        matrix = {"tasks": tasks, "rows": [{"model": m, "cells": [by_task.get((m, t)) for t in tasks]} for m in models]}
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
    }


def _episodes_context(request: HttpRequest, evaluation: Evaluation) -> dict:
    qs = evaluation.episodes.select_related("workload")
    show = request.GET.get("show", "all")
    if show == "failed":
        qs = qs.filter(status=EpisodeStatus.COMPLETED, success=False)
    elif show == "errors":
        qs = qs.filter(status=EpisodeStatus.ERROR)
    elif show == "videos":
        qs = qs.exclude(video="")
    task = request.GET.get("task", "")
    if task:
        qs = qs.filter(workload__task_id=task)
    model = request.GET.get("model", "")
    if model:
        qs = qs.filter(workload__model_ref=model)
    sort = request.GET.get("sort", "index")
    qs = qs.order_by(*EPISODE_SORTS.get(sort, EPISODE_SORTS["index"]))
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    workloads = list(evaluation.workloads.all())
    query = request.GET.copy()
    query.pop("page", None)
    return {
        "episodes_page": page,
        "show": show,
        "task": task,
        "model": model,
        "sort": sort,
        "task_choices": sorted({w.task_id for w in workloads}),
        "model_choices": sorted({w.model_ref for w in workloads}),
        "episode_query": query.urlencode(),
    }


def _configuration_context(evaluation: Evaluation) -> dict:
    formatter = HtmlFormatter(nowrap=False, cssclass="highlight")
    return {
        "raw_request_html": highlight(evaluation.request_raw, JsonLexer(), formatter),
        "config_html": highlight(json.dumps(evaluation.config, indent=2), JsonLexer(), formatter),
        "has_env_vars": any(m.get("envVars") for m in evaluation.config.get("models", [])),
    }


@login_required
@require_GET
def evaluation_detail(request: HttpRequest, public_id: str, tab: str = "overview") -> HttpResponse:
    if tab not in TABS:
        raise Http404("no such tab")
    evaluation = _org_evaluation(request, public_id, _detail_queryset())
    role = active_membership(request).role
    context = {
        "evaluation": evaluation,
        "tab": tab,
        "tabs": TABS,
        "can_write": role in WRITE_ROLES,
        "can_cancel": may_cancel(role=role, user=request.user, evaluation=evaluation),
    }
    if tab == "overview":
        context.update(_overview_context(request, evaluation))
    elif tab == "episodes":
        context.update(_episodes_context(request, evaluation))
    elif tab == "configuration":
        context.update(_configuration_context(evaluation))
    else:
        context["logs"] = evaluation.logs.order_by("id")[:2000]
    return render_page_or_partial(request, "evaluations/evaluation_detail.html", f"tab-{tab}", context)


@login_required
@require_GET
def episode_video(request: HttpRequest, public_id: str, episode_id: int) -> HttpResponse:
    """The episode's MP4, with range requests (the Episodes tab's inline player seeks through it)."""
    return episode_video_response(request, _org_evaluation(request, public_id, Evaluation.objects.all()), episode_id)


@login_required
@require_GET
def evaluation_progress(request: HttpRequest, public_id: str) -> HttpResponse:
    """The live status block of the detail page; polls itself until the evaluation is terminal."""
    return _render_progress(request, _org_evaluation(request, public_id, _detail_queryset()))


def _render_progress(request: HttpRequest, evaluation: Evaluation) -> HttpResponse:
    role = active_membership(request).role
    context = {"evaluation": evaluation, "can_cancel": may_cancel(role=role, user=request.user, evaluation=evaluation)}
    response = render(request, "evaluations/evaluation_detail.html#progress", context)
    if evaluation.is_terminal and request.GET.get("was") in ACTIVE_STATUSES:
        # The status changed under the page: reload so scores and charts show the final numbers.
        response["HX-Refresh"] = "true"
    return response


@login_required
@require_POST
def evaluation_cancel(request: HttpRequest, public_id: str) -> HttpResponse:
    evaluation = _org_evaluation(request, public_id)
    role = active_membership(request).role
    if not may_cancel(role=role, user=request.user, evaluation=evaluation):
        return HttpResponse(cancel_refusal(role), status=403)
    try:
        cancel_evaluation(evaluation)
    except CancelRefused as exc:
        messages.info(request, str(exc))
    if is_partial(request):
        return _render_progress(request, _org_evaluation(request, public_id, _detail_queryset()))
    return redirect(evaluation.get_absolute_url())


@login_required
@require_GET
def evaluation_request_download(request: HttpRequest, public_id: str) -> HttpResponse:
    """The raw request exactly as submitted, as a download."""
    evaluation = _org_evaluation(request, public_id)
    response = HttpResponse(evaluation.request_raw.encode("utf-8"), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{evaluation.public_id}-request.json"'
    return response


# ------------------------------------------------------------------ launch
DEFAULT_REQUEST = {
    "name": "",
    "models": [{"model": "prebuilt/classic-control-heuristics"}],
    "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 10, "seed": 0}],
}


def _preview(raw: str, org) -> dict:
    """What the preview panel shows: the plan summary, or the API's errors for this raw request."""
    try:
        plan = plan_evaluation(parse_request_body(raw.encode("utf-8")), organization=org)
    except RequestInvalid as exc:
        return {"errors": exc.errors, "message": str(exc)}
    return {"workloads": plan.workload_summaries(), "estimates": plan.estimates(), "warnings": plan.warnings}


@login_required
def evaluation_new(request: HttpRequest) -> HttpResponse:
    org = active_organization(request)
    can_write = active_membership(request).role in WRITE_ROLES
    if request.method == "POST":
        if not can_write:
            return HttpResponse("your role cannot launch evaluations", status=403)
        form = LaunchForm(request.POST, organization=org)
        # Browsers submit textarea line breaks as CRLF (HTML spec); the editor showed LF, so store LF.
        raw = request.POST.get("request_json", "").replace("\r\n", "\n")
        if not raw.strip():
            # Without JavaScript the JSON editor is not kept in sync: build the request from the fields.
            if not form.is_valid():
                return render(request, "evaluations/evaluation_new.html", {"form": form, "scenarios": form.scenarios, "can_write": can_write}, status=400)
            raw = form.build_request()
        try:
            plan = plan_evaluation(parse_request_body(raw.encode("utf-8")), organization=org)
        except RequestInvalid as exc:
            form.is_valid()
            form.add_error(None, str(exc))
            context = {"form": form, "preview": {"errors": exc.errors, "message": str(exc)}, "scenarios": form.scenarios, "can_write": can_write}
            return render(request, "evaluations/evaluation_new.html", context, status=400)
        evaluation = create_evaluation(plan=plan, raw_body=raw, organization=org, creator=request.user)
        if request.htmx:
            return HttpResponseClientRedirect(evaluation.get_absolute_url())
        return redirect(evaluation.get_absolute_url())
    raw = json.dumps(DEFAULT_REQUEST, indent=2)
    source = request.GET.get("from")
    if source:
        raw = _org_evaluation(request, source).request_raw
    form = LaunchForm(initial={"request_json": raw}, organization=org)
    context = {"form": form, "preview": _preview(raw, org), "scenarios": form.scenarios, "source": source, "can_write": can_write}
    return render(request, "evaluations/evaluation_new.html", context)


@login_required
@require_POST
def evaluation_preview(request: HttpRequest) -> HttpResponse:
    """The live preview panel of the launch form (htmx)."""
    org = active_organization(request)
    raw = request.POST.get("request_json", "")
    return render(request, "evaluations/evaluation_new.html#preview", {"preview": _preview(raw, org)})


# ---------------------------------------------------------------- compare
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
            rows.append({**r, "model": f"{r['model']} · {label}" if len(chosen) > 1 else r["model"], "task": f"{r['env']} · {_task_label(r)}"})
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
        status__in=[EvaluationStatus.COMPLETED, EvaluationStatus.FAILED, EvaluationStatus.CANCELLED]
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


# ----------------------------------------------------------------- catalog
@login_required
@require_GET
def image_list(request: HttpRequest) -> HttpResponse:
    org = active_organization(request)
    repos = ImageRepository.objects.visible_to(org).select_related("current_version").prefetch_related("versions")
    return render(request, "evaluations/image_list.html", {"repositories": repos})


# ---------------------------------------------------------------- settings
@login_required
def organization_settings(request: HttpRequest) -> HttpResponse:
    membership = active_membership(request)
    org = membership.organization
    is_admin = membership.role in ADMIN_ROLES
    created_key = None
    form = ApiKeyForm()
    if request.method == "POST":
        if not is_admin:
            return HttpResponse("only owners and admins manage API keys", status=403)
        form = ApiKeyForm(request.POST)
        if form.is_valid():
            role = form.cleaned_data["role"]
            order = [Role.VIEWER, Role.MEMBER, Role.ADMIN, Role.OWNER]
            if order.index(role) > order.index(membership.role):
                form.add_error("role", "a key cannot have a higher role than yours")
            else:
                days = form.cleaned_data.get("expires_in_days")
                created_key, _ = ApiKey.issue(
                    organization=org, user=request.user, name=form.cleaned_data["name"], role=role,
                    expires_at=timezone.now() + timedelta(days=days) if days else None,
                )
                form = ApiKeyForm()
    context = {
        "members": Membership.objects.filter(organization=org).select_related("user").order_by("user__username"),
        "invitations": Invitation.objects.filter(organization=org, accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now()),
        "roles": Role.values,
        "keys": _keys_with_effective_role(org),
        "form": form,
        "created_key": created_key,
        "is_admin": is_admin,
    }
    return render_page_or_partial(request, "evaluations/settings.html", "keys", context)


@login_required
@require_POST
def member_update(request: HttpRequest, membership_id: int) -> HttpResponse:
    """Change a member's role, or remove them (``action=remove``); owners/admins only."""
    actor = active_membership(request)
    target = Membership.objects.filter(organization=actor.organization, pk=membership_id).select_related("organization").first()
    if target is None:
        raise Http404("no such member")
    try:
        if request.POST.get("action") == "remove":
            remove_member(target, actor_role=actor.role)
            messages.success(request, f"Removed {target.user.username}.")
        else:
            change_role(target, actor_role=actor.role, role=request.POST.get("role", ""))
            messages.success(request, f"{target.user.username} is now {target.role}.")
    except (MembershipError, ValueError) as exc:
        messages.error(request, str(exc) if isinstance(exc, MembershipError) else "unknown role")
        return redirect("evaluations:settings") if actor.role in ADMIN_ROLES else HttpResponse(str(exc), status=403)
    return redirect("evaluations:settings")


@login_required
@require_POST
def invitation_create(request: HttpRequest) -> HttpResponse:
    actor = active_membership(request)
    try:
        token, _ = create_invitation(
            organization=actor.organization, actor=request.user, actor_role=actor.role,
            role=request.POST.get("role", Role.MEMBER), email=request.POST.get("email", "")[:254],
        )
    except (MembershipError, ValueError) as exc:
        if actor.role not in ADMIN_ROLES:
            return HttpResponse(str(exc), status=403)
        messages.error(request, str(exc) if isinstance(exc, MembershipError) else "unknown role")
        return redirect("evaluations:settings")
    link = f"{settings.PUBLIC_URL}/invitations/{token}"
    messages.success(request, f"Invitation link (shown once, valid 7 days): {link}")
    return redirect("evaluations:settings")


def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link: sign in (or create an account) and join the organization."""
    invitation = find_invitation(token)
    if invitation is None or not invitation.usable:
        return render(request, "evaluations/invitation.html", {"error": "This invitation is invalid, used, revoked or expired."}, status=404)
    form = None
    if not request.user.is_authenticated:
        form = UserCreationForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            user = form.save()
            auth_login(request, user)
        else:
            return render(request, "evaluations/invitation.html", {"invitation": invitation, "form": form})
    if request.method == "POST":
        try:
            membership = accept_invitation(invitation, user=request.user)
        except MembershipError as exc:
            return render(request, "evaluations/invitation.html", {"error": str(exc)}, status=409)
        request.session["organization_id"] = membership.organization_id
        messages.success(request, f"You joined {membership.organization.name} as {membership.role}.")
        return redirect("evaluations:evaluation_list")
    return render(request, "evaluations/invitation.html", {"invitation": invitation})


def _keys_with_effective_role(org) -> list[ApiKey]:
    """The organization's keys, each with ``effective_role`` (capped by its creator's current role) and
    ``inactive_reason`` when its creator left, exactly as the API authenticates them."""
    from .services.identity import ROLE_ORDER

    keys = list(ApiKey.objects.filter(organization=org).select_related("user"))
    roles = dict(Membership.objects.filter(organization=org, user_id__in={k.user_id for k in keys}).values_list("user_id", "role"))
    for key in keys:
        key.inactive_reason = ""
        key.effective_role = key.role
        if key.user_id is not None:
            creator_role = roles.get(key.user_id)
            if creator_role is None:
                key.inactive_reason = "creator left"
            else:
                key.effective_role = min(key.role, creator_role, key=ROLE_ORDER.index)
    return keys


@login_required
@require_POST
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    membership = active_membership(request)
    if membership.role not in ADMIN_ROLES:
        return HttpResponse("only owners and admins manage API keys", status=403)
    key = ApiKey.objects.filter(organization=membership.organization, pk=key_id).first()
    if key is None:
        raise Http404("no such key")
    if key.role == Role.OWNER and membership.role != Role.OWNER:
        return HttpResponse("only owners revoke owner keys", status=403)
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    if is_partial(request):
        key.effective_role, key.inactive_reason = key.role, ""
        return render(request, "evaluations/settings.html#key-row", {"key": key, "is_admin": True})
    return redirect("evaluations:settings")


@login_required
@require_POST
def image_reprobe(request: HttpRequest, version_id: int) -> HttpResponse:
    """Queue another probe of one of the organization's own image versions."""
    from .models import ImageVersion
    from .services.probes import ProbeFailed, queue_probe

    membership = active_membership(request)
    if membership.role not in WRITE_ROLES:
        return HttpResponse("viewers cannot probe images", status=403)
    version = ImageVersion.objects.filter(pk=version_id, repository__namespace=membership.organization.slug).first()
    if version is None:
        raise Http404("no such image version")
    try:
        queue_probe(version)
    except ProbeFailed as exc:
        messages.error(request, str(exc))
        return redirect("evaluations:image_list")
    messages.info(request, f"Probe of {version.repository.path}@{version.digest[:19]}… queued.")
    return redirect("evaluations:image_list")
