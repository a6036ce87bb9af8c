"""The platform's OCI registry: ``GET /v1/registry/info`` (where to push, for the CLI), and the endpoints the
registry itself calls — the Docker token service and push notifications (not DRF: the registry speaks HTTP Basic
and its own JSON)."""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from ..auth import failed_authentication, retry_after
from ..choices import WRITE_ROLES
from ..models import Membership
from ..services.identity import SessionAuth
from ..services.probes import queue_probe
from ..services.registry import authenticate_basic, issue_token, record_push
from .base import OrgScopedView
from .serializers import RegistryInfoSerializer, errors

__all__ = ["RegistryInfoView", "registry_events", "registry_token"]

logger = logging.getLogger(__name__)


class RegistryInfoView(OrgScopedView):
    @extend_schema(responses={200: RegistryInfoSerializer, **errors(401)}, summary="Where to push images, and into which namespaces")
    def get(self, request):
        role = self.role
        if isinstance(request.auth, SessionAuth):
            namespaces = sorted(
                m.organization.slug for m in Membership.objects.filter(user=request.user).select_related("organization") if m.role in WRITE_ROLES
            )
        else:
            namespaces = [self.organization.slug] if role in WRITE_ROLES else []
        return Response({"host": settings.RLMESH_REGISTRY_HOST, "namespaces": namespaces})


# ``registry_token`` and ``registry_events`` are deliberately outside /v1/schema: the registry calls them, not the
# platform's clients, and they speak its protocol (HTTP Basic in, Docker token JSON and ``{"errors": [...]}`` out),
# which the /v1 envelope and bearer auth do not describe. Plain Django views, so drf-spectacular never lists them.


def _unauthorized(message: str) -> JsonResponse:
    body = {"errors": [{"code": "UNAUTHORIZED", "message": message}], "error": {"code": "unauthenticated", "message": message, "details": []}}
    return JsonResponse(body, status=401, headers={"WWW-Authenticate": 'Basic realm="rlmesh-registry"'})


@require_GET
def registry_token(request: HttpRequest) -> JsonResponse:
    """``GET /v1/registry/token?service=…&scope=repository:ns/name:pull,push`` with HTTP Basic credentials."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return _unauthorized("registry credentials required (HTTP Basic)")
    try:
        username, _, password = base64.b64decode(encoded).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return _unauthorized("malformed Basic credentials")
    grantee = authenticate_basic(username, password)  # keys and tokens: a valid one works from a throttled address
    if grantee is None:
        if failed_authentication(request):
            wait = retry_after(request)
            return JsonResponse({"errors": [{"code": "TOOMANYREQUESTS", "message": "too many failed logins"}],
                                 "error": {"code": "throttled", "message": "too many failed authentications from this "
                                           f"address; retry in {wait} s", "details": []}}, status=429,
                                headers={"Retry-After": str(wait)})
        return _unauthorized("invalid username/password: use your user id and `rlmesh token`, or any name and an API key")
    return JsonResponse(issue_token(grantee, request.GET.getlist("scope")))


@csrf_exempt  # the registry posts here with its shared secret, no session
@require_POST
def registry_events(request: HttpRequest) -> JsonResponse:
    """Push notifications from the registry: record new versions and queue their probes."""
    expected = f"Bearer {settings.RLMESH_REGISTRY_NOTIFY_SECRET}"
    if not hmac.compare_digest(request.META.get("HTTP_AUTHORIZATION", ""), expected):
        return JsonResponse({"error": {"code": "unauthenticated", "message": "bad notification secret", "details": []}}, status=401)
    try:
        events = json.loads(request.body).get("events", [])
    except (json.JSONDecodeError, AttributeError):
        return JsonResponse({"error": {"code": "parse_error", "message": "expected {\"events\": [...]}", "details": []}}, status=400)
    new = [v for v in (record_push(e) for e in (events if isinstance(events, list) else []) if isinstance(e, dict)) if v]
    for version in new:
        queue_probe(version)
    return JsonResponse({"recorded": len(new)})
