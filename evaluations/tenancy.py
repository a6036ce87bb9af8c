"""The active organization of a dashboard request: the one chosen in the header (kept in the session), else the
user's first. Views, the middleware and the template context all decide it here."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse

from .models import Evaluation, Membership

__all__ = [
    "NoOrganization", "active_membership", "active_organization", "chosen_membership", "memberships_of", "org_evaluation",
    "role_required",
]


def memberships_of(request: HttpRequest) -> list[Membership]:
    """The user's memberships with their organizations, by organization name (cached on the request)."""
    if not hasattr(request, "_memberships"):
        request._memberships = list(
            Membership.objects.filter(user=request.user).select_related("organization").order_by("organization__name")
        )
    return request._memberships


class NoOrganization(Http404):
    """The signed-in user belongs to no organization (rendered by NoOrganizationMiddleware)."""


def active_membership(request: HttpRequest) -> Membership:
    """The membership of the organization chosen in the header (session), else the first one; 404 if none."""
    membership = chosen_membership(request)
    if membership is None:
        raise NoOrganization()
    return membership


def chosen_membership(request: HttpRequest) -> Membership | None:
    """The active membership, or None when the user belongs to no organization."""
    memberships = memberships_of(request)
    chosen = request.session.get("organization_id")
    return next((m for m in memberships if m.organization_id == chosen), memberships[0] if memberships else None)


def active_organization(request: HttpRequest):
    """The active membership's organization (NoOrganization when there is none)."""
    return active_membership(request).organization


def org_evaluation(request: HttpRequest, public_id: str, queryset=None) -> Evaluation:
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


def role_required(roles, message: str):
    """View decorator: a 403 with ``message`` unless the user's role in the active organization is one of ``roles``."""

    def decorate(view):
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            if active_membership(request).role not in roles:
                return HttpResponse(message, status=403)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
