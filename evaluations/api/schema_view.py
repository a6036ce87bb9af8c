"""``/v1/schema``: drf-spectacular's view, with an unknown ``?format=`` answered as a JSON 400 naming the formats,
and ``?version=`` ignored (the API has one version; drf-spectacular echoed any value into ``info.version``)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.views import SpectacularAPIView
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer


class SchemaView(SpectacularAPIView):
    """The OpenAPI document as YAML (the default) or JSON (``?format=json`` or ``Accept: application/json``)."""

    def perform_content_negotiation(self, request, force=False):
        try:
            return super().perform_content_negotiation(request, force)
        except Http404:
            # DRF's answer to an unknown ?format= is a 404 rendered in the schema's first format (YAML); say what
            # is accepted, in the error envelope as JSON.
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), "application/json"
            formats = sorted({r.format for r in self.get_renderers()})
            raise ValidationError({"format": [f"must be one of: {', '.join(formats)}"]}) from None

    def _get_version_parameter(self, request):
        return None
