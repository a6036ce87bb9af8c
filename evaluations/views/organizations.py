"""Switching the active organization, changing and removing members, and invitations by link."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login as auth_login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from ..choices import ADMIN_ROLES, Role
from ..models import Membership
from ..services.organizations import MembershipError, accept_invitation, change_role, create_invitation, find_invitation, remove_member
from ..tenancy import active_membership, memberships_of


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
