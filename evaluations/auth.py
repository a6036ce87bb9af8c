"""API authentication and the organization-scoping permission."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.http import HttpResponse
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


#: The one counter of failed sign-ins per address (django-ratelimit's, in the default cache: Redis or the file cache
#: every web process shares). Every way to present a password or a key counts into it: the dashboard's and the
#: admin's sign-in forms (``user_login_failed``), API keys and session tokens on /v1 and /agents, the registry's
#: Basic login, unknown device codes and refresh tokens at /oauth/token.
SIGN_IN_FAILURES = "sign-in-failures"


def failed_authentication(request, *, count: bool = True) -> bool:
    """Whether the address of ``request`` (a Django request) has used up its ``RATELIMIT_AUTH_FAILURES`` failed
    sign-ins in the current window; with ``count``, this call records one more failure first.

    What a caller does with the answer depends on what was presented: a password (guessable) is not checked at all
    once the address is over the limit (:func:`password_sign_in`); a key or token (long random strings that cannot
    be guessed) is checked first, so a valid one keeps working, and only a bad one is answered 429."""
    usage = get_usage(request, group=SIGN_IN_FAILURES, key=_client_address, rate=settings.RATELIMIT_AUTH_FAILURES,
                      increment=count)
    # N allowed failures: the (N+1)th is refused, whether it is being counted now or about to be tried.
    return usage is not None and (usage["count"] > usage["limit"] if count else usage["count"] >= usage["limit"])


def retry_after(request) -> int:
    """Seconds (≥ 1) until the address of ``request`` starts a new ``RATELIMIT_AUTH_FAILURES`` window: django-ratelimit
    counts in fixed windows of the rate's period (a minute for ``30/m``), so this is what a ``Retry-After`` says."""
    usage = get_usage(request, group=SIGN_IN_FAILURES, key=_client_address, rate=settings.RATELIMIT_AUTH_FAILURES,
                      increment=False)
    return max(1, int(usage["time_left"])) if usage is not None else 1


def sign_in_throttled_response(wait: int) -> HttpResponse:
    return HttpResponse(f"Too many failed sign-ins from this address; try again in {wait} s.", status=429,
                        headers={"Retry-After": str(wait)}, content_type="text/plain; charset=utf-8")


def password_sign_in(view):
    """Wrap a sign-in view that checks a password with ``django.contrib.auth.authenticate`` (the dashboard's and the
    admin's forms): a POST from an address over the sign-in limit is a 429 before any password is checked; each
    failure is counted by :func:`count_failed_sign_in` (the ``user_login_failed`` signal)."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method == "POST" and failed_authentication(request, count=False):
            return sign_in_throttled_response(retry_after(request))
        return view(request, *args, **kwargs)

    return wrapper


def count_failed_sign_in(sender, credentials=None, request=None, **kwargs) -> None:
    """``user_login_failed`` receiver: a wrong password through any ``authenticate(request, …)`` counts once."""
    if request is not None:
        failed_authentication(request)


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
        try:
            return self._authenticate(request)  # a valid key works whatever its address did before
        except exceptions.AuthenticationFailed:
            if failed_authentication(request._request):
                raise exceptions.Throttled(wait=retry_after(request._request),
                                           detail="too many failed authentications from this address.") from None
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
