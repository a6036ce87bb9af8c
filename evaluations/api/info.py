"""``GET /v1/info``: the discovery document the official CLI reads before anything else."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.response import Response
from rest_framework.views import APIView

from .serializers import InfoSerializer, errors

__all__ = ["InfoView"]


class InfoView(APIView):
    """Discovery document (no authentication)."""

    authentication_classes: list = []
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={200: InfoSerializer, **errors()}, summary="Platform discovery")
    def get(self, request):
        return Response(
            {
                "name": "RLMesh evaluation platform",
                "version": "1",
                "rlmesh": "0.1.0",
                "workflowEditions": [settings.RLMESH_WORKFLOW_EDITION],
                "auth": {
                    "cli": {"clientId": settings.RLMESH_CLI_CLIENT_ID},
                    "deviceAuthorizationEndpoint": f"{settings.PUBLIC_URL}/oauth/device_authorization",
                    "tokenEndpoint": f"{settings.PUBLIC_URL}/oauth/token",
                    "issuer": settings.PUBLIC_URL,
                },
                "urls": {"dashboard": settings.PUBLIC_URL, "api": f"{settings.PUBLIC_URL}/v1", "docs": f"{settings.PUBLIC_URL}/v1/docs"},
            }
        )
