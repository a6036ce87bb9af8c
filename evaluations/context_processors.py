"""Template context for every dashboard page: the active organization and the switcher's choices."""

from __future__ import annotations

from .choices import WRITE_ROLES
from .tenancy import chosen_membership, memberships_of


def organization(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    active = chosen_membership(request)
    if active is None:
        return {"memberships": []}
    return {"memberships": memberships_of(request), "active_membership": active, "organization": active.organization,
            "can_launch": active.role in WRITE_ROLES}
