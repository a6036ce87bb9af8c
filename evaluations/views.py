"""Dashboard pages (server-rendered; the full htmx dashboard builds on these)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from .models import Evaluation, Membership
from .reports import evaluation_scores


def active_organization(request: HttpRequest):
    """The signed-in user's active organization (their first membership for now); 404 if none."""
    membership = Membership.objects.filter(user=request.user).select_related("organization").order_by("created_at").first()
    if membership is None:
        raise Http404("you are not a member of any organization")
    return membership.organization


def home(request: HttpRequest) -> HttpResponse:
    return redirect("evaluations:evaluation_list")


@login_required
def evaluation_list(request: HttpRequest) -> HttpResponse:
    org = active_organization(request)
    evaluations = Evaluation.objects.for_org(org).select_related("creator")[:100]
    return render(request, "evaluations/evaluation_list.html", {"organization": org, "evaluations": evaluations})


@login_required
def evaluation_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    org = active_organization(request)
    evaluation = Evaluation.objects.for_org(org).filter(public_id=public_id).select_related("creator").first()
    if evaluation is None:
        raise Http404(f"evaluation {public_id} not found")
    scores = evaluation_scores(evaluation, "task")
    episodes = evaluation.episodes.select_related("workload").order_by("workload__index", "index")[:500]
    logs = evaluation.logs.order_by("created_at", "id")[:500]
    return render(
        request,
        "evaluations/evaluation_detail.html",
        {"organization": org, "evaluation": evaluation, "scores": scores, "episodes": episodes, "logs": logs},
    )
