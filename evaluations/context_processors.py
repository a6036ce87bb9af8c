"""Template context for every dashboard page: the active organization and the switcher's choices."""

from __future__ import annotations


def organization(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from .views import memberships_of

    memberships = memberships_of(request)
    if not memberships:
        return {"memberships": []}
    chosen = request.session.get("organization_id")
    active = next((m for m in memberships if m.organization_id == chosen), memberships[0])
    from .choices import WRITE_ROLES

    return {"memberships": memberships, "active_membership": active, "organization": active.organization,
            "can_launch": active.role in WRITE_ROLES}
