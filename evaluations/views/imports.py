"""Dashboard page "Import a local run": upload an ``rlmesh.result.v1`` bundle (see evaluations/imports/)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRedirect
from django_ratelimit.decorators import ratelimit

from ..choices import WRITE_ROLES
from ..forms import ImportForm
from ..imports import import_bundle
from ..planning import RequestInvalid
from ..tenancy import active_membership

__all__ = ["evaluation_import"]


@login_required
@ratelimit(key="user_or_ip", rate=lambda g, r: settings.RATELIMIT_IMPORT, method="POST", block=True)
def evaluation_import(request: HttpRequest) -> HttpResponse:
    """GET: the upload form. POST (members and above): import, then redirect to the new evaluation.

    A bad bundle re-renders the form with status 400 and every problem's path; viewers get 403.
    """
    membership = active_membership(request)
    can_write = membership.role in WRITE_ROLES
    form = ImportForm()
    errors: list[dict] = []
    status = 200
    if request.method == "POST":
        if not can_write:
            return HttpResponse("your role cannot import evaluations", status=403)
        form = ImportForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                evaluation = import_bundle(
                    form.cleaned_data["bundle"], organization=membership.organization, user=request.user,
                    name=form.cleaned_data["name"],
                )
            except RequestInvalid as exc:
                form.add_error(None, str(exc))
                errors = exc.errors
            else:
                if request.htmx:
                    return HttpResponseClientRedirect(evaluation.get_absolute_url())
                return redirect(evaluation.get_absolute_url())
        status = 400
    context = {"form": form, "errors": errors, "can_write": can_write, "max_bytes": settings.RLMESH_IMPORT_MAX_BYTES}
    return render(request, "evaluations/evaluation_import.html", context, status=status)
