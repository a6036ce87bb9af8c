"""The device-approval page at the CLI's ``verification_uri``, and what a rate-limited request gets."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django_ratelimit.decorators import ratelimit

from ..models import Membership
from ..services import identity

__all__ = ["activate", "rate_limited"]


def rate_limited(request: HttpRequest, exception=None) -> HttpResponse:
    """What a rate-limited request gets (RATELIMIT_VIEW): 429, JSON for OAuth and API paths."""
    if request.path.startswith(("/oauth/", "/v1/")):
        body = {"error": "slow_down", "error_description": "too many requests; retry in a minute"}
        return JsonResponse(body, status=429, headers={"Retry-After": "60"})
    return HttpResponse("Too many attempts; wait a minute and try again.", status=429, headers={"Retry-After": "60"})


@login_required
@ratelimit(key="user_or_ip", rate=lambda g, r: settings.RATELIMIT_LOGIN, method="POST", block=True)
def activate(request: HttpRequest) -> HttpResponse:
    """The page at ``verification_uri``: a signed-in user sees the code and who asks, and approves or denies."""
    memberships = list(Membership.objects.filter(user=request.user).select_related("organization"))
    code = (request.POST.get("user_code") or request.GET.get("user_code") or "").strip()
    context: dict = {"user_code": code, "memberships": memberships}
    if code:
        record = identity.pending_device(code)
        context["record"] = record
        if record is None:
            context["error"] = f"No pending sign-in with code {code}: it may have expired or been used. Run rlmesh login again."
        elif request.method == "POST":
            decision = request.POST.get("decision")
            if decision == "approve":
                org_id = request.POST.get("organization", "")
                membership = next((m for m in memberships if m.organization.provider_id == org_id), None)
                if membership is None:
                    context["error"] = "Choose one of your organizations."
                else:
                    identity.approve_device(record, user=request.user, organization=membership.organization)
                    context["done"] = f"Approved. The CLI is now signed in as {request.user.username} in {membership.organization.name}; you can close this page."
            elif decision == "deny":
                identity.deny_device(record, user=request.user)
                context["done"] = "Denied. The CLI was not signed in."
    status = 404 if context.get("error") and "No pending" in context["error"] else 200
    return render(request, "evaluations/activate.html", context, status=status)
