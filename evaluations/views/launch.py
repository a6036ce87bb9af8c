"""The launch form: a request built from fields or edited as JSON, previewed live (the same planning as the API), and
submitted; "Run again" opens it with a past evaluation's raw request."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from ..choices import WRITE_ROLES
from ..domain import perturbations
from ..forms import LaunchForm
from ..planning import RequestInvalid, live_warnings, parse_request_body, plan_evaluation
from ..runs.lifecycle import create_evaluation
from ..tenancy import active_membership, active_organization, org_evaluation

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
    return {"workloads": plan.workload_summaries(), "estimates": plan.estimates(),
            "warnings": plan.warnings + live_warnings()}


def _page(request: HttpRequest, form: LaunchForm, *, status: int = 200, **context) -> HttpResponse:
    can_write = active_membership(request).role in WRITE_ROLES
    context = {"form": form, "catalogs": form.catalogs, "can_write": can_write,
               "perturbation_catalog": perturbation_catalog(), **context}
    return render(request, "evaluations/evaluation_new.html", context, status=status)


def perturbation_catalog() -> list[dict]:
    """The perturbations a task may name, with their range, for the form's hints."""
    return [{"name": k.name, "unit": k.unit, "min": k.minimum, "max": k.maximum, "integer": k.integer, "description": k.description}
            for k in perturbations.CATALOG.values()]


def _submitted_request(request: HttpRequest, form: LaunchForm) -> str | None:
    """The request text a POST launches: the JSON editor's (what JavaScript keeps in sync with the fields), unless
    the fields were submitted ("Launch from these fields", the no-JavaScript path) or the JSON is empty; None when
    the fields do not validate."""
    # Browsers submit textarea line breaks as CRLF (HTML spec); the editor showed LF, so store LF.
    raw = request.POST.get("request_json", "").replace("\r\n", "\n")
    if raw.strip() and request.POST.get("source") != "fields":
        return raw
    return form.build_request() if form.is_valid() else None


@login_required
def evaluation_new(request: HttpRequest) -> HttpResponse:
    org = active_organization(request)
    can_write = active_membership(request).role in WRITE_ROLES
    if request.method == "POST":
        if not can_write:
            return HttpResponse("your role cannot launch evaluations", status=403)
        form = LaunchForm(request.POST, organization=org)
        raw = _submitted_request(request, form)
        if raw is None:
            return _page(request, form, status=400)
        try:
            plan = plan_evaluation(parse_request_body(raw.encode("utf-8")), organization=org)
        except RequestInvalid as exc:
            form.is_valid()
            form.add_error(None, str(exc))
            return _page(request, form, status=400, preview={"errors": exc.errors, "message": str(exc)})
        evaluation = create_evaluation(plan=plan, raw_body=raw, organization=org, creator=request.user)
        if request.htmx:
            return HttpResponseClientRedirect(evaluation.get_absolute_url())
        return redirect(evaluation.get_absolute_url())
    raw = json.dumps(DEFAULT_REQUEST, indent=2)
    source = request.GET.get("from")
    if source:
        raw = org_evaluation(request, source).request_raw
    form = LaunchForm(initial={"request_json": raw}, organization=org)
    return _page(request, form, preview=_preview(raw, org), source=source)


@login_required
@require_POST
def evaluation_preview(request: HttpRequest) -> HttpResponse:
    """The live preview panel of the launch form (htmx)."""
    org = active_organization(request)
    raw = request.POST.get("request_json", "")
    return render(request, "evaluations/evaluation_new.html#preview", {"preview": _preview(raw, org)})
