"""API authentication and the organization-scoping permission."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from django_ratelimit.core import get_usage
from rest_framework import authentication, exceptions, permissions

from .choices import WRITE_ROLES
from .models import ApiKey
from .models.organizations import API_KEY_PREFIX
from .services.identity import InvalidToken, decode_access_token


def _client_address(group, request) -> str:
    # REMOTE_ADDR as the proxy middleware left it; absent only for in-process WSGI calls (tests).
    return request.META.get("REMOTE_ADDR", "")


def failed_authentication(request, *, count: bool = True) -> bool:
    """Whether the address of ``request`` (a Django request) has used up its ``RATELIMIT_AUTH_FAILURES`` failed
    authentications in the current window; with ``count``, this call records one more failure first. Shared by /v1
    and the registry's token endpoint, so guessing keys costs the same everywhere."""
    usage = get_usage(request, group="auth-failures", key=_client_address, rate=settings.RATELIMIT_AUTH_FAILURES,
                      increment=count)
    return usage is not None and usage["count"] >= usage["limit"]


class BearerAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <token>``: an API key (``rlm_…``) or a session access token (JWT).

    Missing, malformed, unknown, revoked or expired credentials → 401. On success ``request.user`` is the
    user, ``request.auth`` the ApiKey or SessionAuth, and ``request.organization`` / ``request.role`` the
    organization and effective role. An API key's role is capped by its creator's current role.
    """

    keyword = "Bearer"

    def authenticate(self, request):
        if not request.META.get("HTTP_AUTHORIZATION"):
            return None  # anonymous: permissions decide (401 where a credential is needed)
        if failed_authentication(request._request, count=False):
            raise exceptions.Throttled(wait=60, detail="too many failed authentications from this address.")  # DRF adds "Expected available in 60 seconds."
        try:
            return self._authenticate(request)
        except exceptions.AuthenticationFailed:
            failed_authentication(request._request)
            raise

    def _authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise exceptions.AuthenticationFailed("expected an Authorization: Bearer <token> header")
        if not token.startswith(API_KEY_PREFIX):
            return self._authenticate_session(request, token)
        key = ApiKey.objects.for_key(token)
        if key is None:
            raise exceptions.AuthenticationFailed("invalid API key")
        if not key.is_usable:
            raise exceptions.AuthenticationFailed("API key revoked" if key.revoked_at else "API key expired")
        role = key.effective_role()
        if role is None:
            raise exceptions.AuthenticationFailed(
                "API key's creator is deactivated" if key.user is not None and not key.user.is_active
                else "API key's creator is no longer a member of the organization")
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
            # Written at most once a minute per key, to keep reads cheap.
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        request._request.organization = key.organization
        request._request.role = role
        return (key.user, key)

    def _authenticate_session(self, request, token: str):
        try:
            auth = decode_access_token(token)
        except InvalidToken as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        request._request.organization = auth.membership.organization
        request._request.role = auth.membership.role
        return (auth.session.user, auth)

    def authenticate_header(self, request) -> str:
        # Present so DRF answers 401 (not 403): only a 401 makes the CLI refresh its session.
        return 'Bearer realm="rlmesh"'


class IsOrganizationMember(permissions.BasePermission):
    """Authenticated callers read; only owner/admin/member roles write (viewers get 403)."""

    message = "your role in this organization cannot do this"

    def has_permission(self, request, view) -> bool:
        if request.auth is None:
            raise exceptions.NotAuthenticated("authentication required: send Authorization: Bearer <API key>")
        if request.method in permissions.SAFE_METHODS or getattr(view, "read_only_post", False):
            return True
        return getattr(request._request, "role", None) in WRITE_ROLES
