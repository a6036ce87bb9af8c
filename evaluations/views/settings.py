"""Organization settings: members, invitations and API keys (owners and admins manage them)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from ..choices import ADMIN_ROLES, ROLE_ORDER, Role
from ..forms import ApiKeyForm
from ..htmx import is_partial, render_page_or_partial
from ..models import ApiKey, Invitation, Membership
from ..selectors import api_keys_with_effective_role
from ..tenancy import active_membership, role_required
from .agents import webhook_settings


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
            if ROLE_ORDER.index(role) > ROLE_ORDER.index(membership.role):
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
        "keys": api_keys_with_effective_role(org),
        "form": form,
        "created_key": created_key,
        "is_admin": is_admin,
        **webhook_settings(membership),
    }
    return render_page_or_partial(request, "evaluations/settings.html", "keys", context)


@login_required
@require_POST
@role_required(ADMIN_ROLES, "only owners and admins manage API keys")
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    membership = active_membership(request)
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
