"""Organization membership: invitations by link, role changes and removals."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from ..choices import ADMIN_ROLES, ROLE_ORDER, Role
from ..models import Invitation, Membership, Organization
from ..models.identity import hash_secret

__all__ = ["MembershipError", "accept_invitation", "change_role", "create_invitation", "remove_member"]


class MembershipError(Exception):
    """A membership change that is not allowed; ``str()`` says why."""


def _check_grant(actor_role: str, role: str) -> None:
    if actor_role not in ADMIN_ROLES:
        raise MembershipError("only owners and admins manage members")
    if ROLE_ORDER.index(role) > ROLE_ORDER.index(actor_role):
        raise MembershipError("you cannot grant a role higher than your own")


def create_invitation(*, organization: Organization, actor, actor_role: str, role: str, email: str = "", days: int = 7) -> tuple[str, Invitation]:
    """Create an invitation link token (returned once, stored hashed) for ``role`` ≤ the actor's role."""
    _check_grant(actor_role, role)
    token = secrets.token_urlsafe(24)
    invitation = Invitation.objects.create(
        organization=organization, role=role, email=email, created_by=actor,
        token_hash=hash_secret(token), expires_at=timezone.now() + timedelta(days=days),
    )
    return token, invitation


def find_invitation(token: str) -> Invitation | None:
    return Invitation.objects.select_related("organization").filter(token_hash=hash_secret(token)).first()


@transaction.atomic
def accept_invitation(invitation: Invitation, *, user) -> Membership:
    """Make ``user`` a member with the invitation's role (an existing member keeps the higher role); once only."""
    if not Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now()).update(
        accepted_at=timezone.now(), accepted_by=user
    ):
        raise MembershipError("this invitation was already used, revoked or has expired")
    membership, created = Membership.objects.get_or_create(
        user=user, organization=invitation.organization, defaults={"role": invitation.role}
    )
    if not created and ROLE_ORDER.index(invitation.role) > ROLE_ORDER.index(membership.role):
        membership.role = invitation.role
        membership.save(update_fields=["role"])
    return membership


def _owners_left(organization: Organization, excluding: Membership) -> int:
    return Membership.objects.filter(organization=organization, role=Role.OWNER).exclude(pk=excluding.pk).count()


@transaction.atomic
def change_role(membership: Membership, *, actor_role: str, role: str) -> None:
    """Change a member's role. Only owners touch owners; the last owner cannot be demoted."""
    _check_grant(actor_role, role)
    if membership.role == Role.OWNER and actor_role != Role.OWNER:
        raise MembershipError("only owners change an owner's role")
    if membership.role == Role.OWNER and role != Role.OWNER and _owners_left(membership.organization, membership) == 0:
        raise MembershipError("an organization needs at least one owner")
    membership.role = role
    membership.save(update_fields=["role"])


@transaction.atomic
def remove_member(membership: Membership, *, actor_role: str) -> None:
    """Remove a member. Only owners remove owners; the last owner stays."""
    if actor_role not in ADMIN_ROLES:
        raise MembershipError("only owners and admins manage members")
    if membership.role == Role.OWNER and actor_role != Role.OWNER:
        raise MembershipError("only owners remove an owner")
    if membership.role == Role.OWNER and _owners_left(membership.organization, membership) == 0:
        raise MembershipError("an organization needs at least one owner")
    membership.delete()
