"""OAuth endpoints for the official CLI (form-encoded, RFC 6749/8628 error bodies) and the approval page."""

from __future__ import annotations


from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from functools import wraps
from django_ratelimit.decorators import ratelimit

from .models import Membership
from .services import identity


def rate_limited(request: HttpRequest, exception=None) -> HttpResponse:
    """What a rate-limited request gets (RATELIMIT_VIEW): 429, JSON for OAuth and API paths."""
    if request.path.startswith(("/oauth/", "/v1/")):
        body = {"error": "slow_down", "error_description": "too many requests; retry in a minute"}
        return JsonResponse(body, status=429, headers={"Retry-After": "60"})
    return HttpResponse("Too many attempts; wait a minute and try again.", status=429, headers={"Retry-After": "60"})


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
        return _oauth_error(exc)
    return JsonResponse(tokens)


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
