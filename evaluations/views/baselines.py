"""Setting and unsetting an evaluation as the baseline of one of its tags, from its detail page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from ..choices import WRITE_ROLES
from ..services.baselines import BaselineRefused, set_baseline, unset_baseline
from ..tenancy import active_organization, org_evaluation, role_required


@login_required
@require_POST
@role_required(WRITE_ROLES, "viewers cannot change baselines")
def evaluation_baseline(request: HttpRequest, public_id: str) -> HttpResponse:
    """``action=set``: make this evaluation the baseline of ``tag``; ``action=unset``: stop, if it still is."""
    evaluation = org_evaluation(request, public_id)
    organization = active_organization(request)
    tag = request.POST.get("tag", "")
    try:
        if request.POST.get("action") == "unset":
            if unset_baseline(organization=organization, tag=tag, evaluation=evaluation):
                messages.success(request, f"{tag} has no baseline any more.")
            else:
                messages.info(request, f"This evaluation was no longer the baseline of {tag}.")
        else:
            set_baseline(organization=organization, tag=tag, evaluation=evaluation, user=request.user)
            messages.success(request, f"This evaluation is now the baseline of {tag}: later completed evaluations "
                                      "with that tag get a regression verdict against it.")
    except BaselineRefused as exc:
        messages.error(request, str(exc))
    return redirect(reverse("evaluations:evaluation_tab", args=[evaluation.public_id, "overview"]) + "#regression")
