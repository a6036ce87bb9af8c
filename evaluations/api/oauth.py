"""The OAuth endpoints the official CLI signs in with (``rlmesh login``): RFC 8628 device authorization and the token
endpoint (device-code and refresh grants). Form-encoded in, RFC 6749 JSON errors out, rate limited per address."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django_ratelimit.decorators import ratelimit

from ..auth import failed_authentication, retry_after
from ..services import identity

__all__ = ["device_authorization", "token"]


def oauth_endpoint(view):
    """POST-only, form-encoded: anything else gets an RFC 6749 JSON error instead of Django's HTML."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        if request.method != "POST":
            return JsonResponse({"error": "invalid_request", "error_description": "use POST"}, status=405, headers={"Allow": "POST"})
        if request.content_type not in ("application/x-www-form-urlencoded", "multipart/form-data"):
            return _oauth_error(identity.OAuthError("invalid_request", "send an application/x-www-form-urlencoded body"))
        if int(request.META.get("CONTENT_LENGTH") or 0) > 16_384:
            return _oauth_error(identity.OAuthError("invalid_request", "request body too large"))
        return view(request, *args, **kwargs)

    return wrapper


def _require(request: HttpRequest, *fields: str) -> None:
    missing = [f for f in fields if not request.POST.get(f)]
    if missing:
        raise identity.OAuthError("invalid_request", f"missing {', '.join(missing)}")


def _oauth_error(exc: identity.OAuthError) -> JsonResponse:
    return JsonResponse({"error": exc.error, "error_description": exc.description}, status=exc.status)


def _client_ip(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR", "")


@csrf_exempt  # a public OAuth client posts here with no session or cookie
@oauth_endpoint
@ratelimit(key="ip", rate=lambda g, r: settings.RATELIMIT_OAUTH, block=True)
@never_cache
def device_authorization(request: HttpRequest) -> JsonResponse:
    """RFC 8628 §3.1–3.2: ``client_id`` in, device and user codes out."""
    try:
        _require(request, "client_id")
        device_code, record = identity.start_device_authorization(
            client_id=request.POST.get("client_id", ""), requester_ip=_client_ip(request)
        )
    except identity.OAuthError as exc:
        return _oauth_error(exc)
    verification = f"{settings.PUBLIC_URL}/activate"
    return JsonResponse(
        {
            "device_code": device_code,
            "user_code": record.user_code,
            "verification_uri": verification,
            "verification_uri_complete": f"{verification}?user_code={record.user_code}",
            "expires_in": settings.DEVICE_CODE_TTL,
            "interval": record.interval,
        }
    )


@csrf_exempt
@oauth_endpoint
@ratelimit(key="ip", rate=lambda g, r: settings.RATELIMIT_OAUTH, block=True)
@never_cache
def token(request: HttpRequest) -> JsonResponse:
    """The token endpoint: the device-code grant and the refresh grant (with the CLI's ``organization_id``)."""
    grant = request.POST.get("grant_type", "")
    client_id = request.POST.get("client_id", "")
    try:
        _require(request, "grant_type", "client_id")
        if grant == identity.DEVICE_GRANT:
            _require(request, "device_code")
            tokens = identity.redeem_device_code(device_code=request.POST.get("device_code", ""), client_id=client_id)
        elif grant == "refresh_token":
            _require(request, "refresh_token")
            tokens = identity.refresh_session(
                refresh_token=request.POST.get("refresh_token", ""),
                client_id=client_id,
                organization_id=request.POST.get("organization_id") or None,
            )
        else:
            raise identity.OAuthError("unsupported_grant_type", f'grant_type "{grant}" is not supported')
    except identity.OAuthError as exc:
        if exc.unknown_credential and failed_authentication(request):  # a guessed code or token: the sign-in limit
            wait = retry_after(request)
            return JsonResponse({"error": "slow_down", "error_description": "too many failed sign-ins from this "
                                 f"address; retry in {wait} s"}, status=429, headers={"Retry-After": str(wait)})
        return _oauth_error(exc)
    return JsonResponse(tokens)
