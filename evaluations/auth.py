"""API authentication and the organization-scoping permission."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import authentication, exceptions, permissions

from .choices import WRITE_ROLES
from .models import ApiKey


class BearerAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <API key>``. Missing, malformed, unknown, revoked or expired → 401.

    On success ``request.user`` is the key's user, ``request.auth`` the ApiKey, and
    ``request.organization`` / ``request.role`` the key's organization and role.
    """

    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise exceptions.AuthenticationFailed("expected an Authorization: Bearer <token> header")
        key = ApiKey.objects.for_key(token)
        if key is None:
            raise exceptions.AuthenticationFailed("invalid API key")
        if not key.is_usable:
            raise exceptions.AuthenticationFailed("API key revoked" if key.revoked_at else "API key expired")
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
            # Written at most once a minute per key, to keep reads cheap.
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        request._request.organization = key.organization
        request._request.role = key.role
        return (key.user, key)

    def authenticate_header(self, request) -> str:
        # Present so DRF answers 401 (not 403): only a 401 makes the CLI refresh its session.
        return 'Bearer realm="rlmesh"'


class IsOrganizationMember(permissions.BasePermission):
    """Authenticated callers read; only owner/admin/member roles write (viewers get 403)."""

    message = "your role in this organization cannot do this"

    def has_permission(self, request, view) -> bool:
        if request.auth is None:
            raise exceptions.NotAuthenticated("authentication required: send Authorization: Bearer <API key>")
        if request.method in permissions.SAFE_METHODS:
            return True
        return getattr(request._request, "role", None) in WRITE_ROLES
