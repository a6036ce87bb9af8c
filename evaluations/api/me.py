"""``/v1/me``: who the credential acts as, its organizations, and signing out (``rlmesh whoami``, ``org list``,
``logout``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotAuthenticated, PermissionDenied
from rest_framework.response import Response

from ..models import Membership
from ..services.identity import SessionAuth, revoke_session
from .base import OrgScopedView
from .serializers import MeSerializer, MyOrganizationsSerializer, errors

__all__ = ["MeView", "MyOrganizationsView", "MySessionView"]


def _organization_dict(org, *, active: bool | None = None) -> dict:
    data = {"id": org.pk, "providerId": org.provider_id, "name": org.name, "registryNamespace": org.slug}
    if active is not None:
        data["active"] = active
    return data


class MeView(OrgScopedView):
    """Who the credential acts as (sessions and API keys alike); ``rlmesh whoami`` reads it."""

    @extend_schema(responses={200: MeSerializer, **errors(401)}, summary="The caller's identity and organization")
    def get(self, request):
        user = request.user
        subject = {"id": f"user_{user.pk}", "email": user.email or "", "displayName": user.get_full_name() or user.username} if user else {"id": "apikey", "email": "", "displayName": ""}
        is_session = isinstance(request.auth, SessionAuth)
        return Response(
            {
                "subject": subject,
                "organization": _organization_dict(self.organization),
                "role": request._request.role,
                "credential": "session" if is_session else "api_key",
                **({"session": request.auth.session.public_id} if is_session else {"apiKey": f"rlm_{request.auth.prefix}…"}),
            }
        )


class MyOrganizationsView(OrgScopedView):
    @extend_schema(responses={200: MyOrganizationsSerializer, **errors(401)}, summary="The caller's organizations; `active` marks the current one")
    def get(self, request):
        if isinstance(request.auth, SessionAuth):
            memberships = Membership.objects.filter(user=request.user).select_related("organization").order_by("organization__name")
            items = [_organization_dict(m.organization, active=m.organization_id == self.organization.pk) | {"role": m.role} for m in memberships]
        else:  # an API key belongs to exactly one organization
            items = [_organization_dict(self.organization, active=True) | {"role": request._request.role}]
        return Response({"organizations": items})


class MySessionView(OrgScopedView):
    permission_classes: list = []

    @extend_schema(request=None, responses={204: None, **errors(401, 403, _403="The credential is an API key, which has no session (revoke keys under Settings).")}, summary="Sign out: revoke the session behind this access token (idempotent)")
    def delete(self, request):
        if request.auth is None:
            raise NotAuthenticated("authentication required")
        if not isinstance(request.auth, SessionAuth):
            # A well-formed request this credential may not make: 403, not a 400 (nothing in it is malformed).
            raise PermissionDenied("an API key has no session; revoke the key under Settings")
        revoke_session(request.auth.session, reason="signed out")
        return Response(status=status.HTTP_204_NO_CONTENT)
