"""What every authenticated /v1 view shares: the caller's organization, evaluation lookup scoped to it, and the raw
JSON body."""

from __future__ import annotations

from rest_framework.exceptions import NotFound, UnsupportedMediaType
from rest_framework.views import APIView

from ..models import Evaluation
from ..planning import parse_request_body
from .parsers import check_size
__all__ = ["OrgScopedView"]


class OrgScopedView(APIView):
    # Base for authenticated endpoints: ``self.organization`` is the caller's organization. (A comment, not a
    # docstring: drf-spectacular would show a base class's docstring as every subclass's operation description.)

    @property
    def organization(self):
        return self.request._request.organization

    def get_evaluation(self, public_id: str, queryset=None) -> Evaluation:
        """The organization's evaluation with this id; another organization's is simply not found (404)."""
        if "\x00" in public_id:  # no id holds one, and PostgreSQL refuses to compare text with it
            raise NotFound(f"evaluation {public_id} not found")
        qs = queryset if queryset is not None else Evaluation.objects.select_related("creator")
        evaluation = qs.for_org(self.organization).filter(public_id=public_id).first()
        if evaluation is None:
            raise NotFound(f"evaluation {public_id} not found")
        return evaluation

    def read_request_body(self) -> tuple[str, dict]:
        """The raw body (as text, byte-for-byte) and its parsed JSON object. A Content-Type other than JSON
        (``application/json`` or ``…+json``) is a 415; a body that is not a JSON object a RequestInvalid (400)."""
        media_type = self.request.content_type.split(";", 1)[0].strip().lower()
        if media_type != "application/json" and not media_type.endswith("+json"):
            raise UnsupportedMediaType(media_type or "(none)", detail=f'send the request as JSON (Content-Type: '
                                       f'application/json), not {media_type or "without a Content-Type"}')
        check_size(self.request)
        raw = self.request._request.body
        data = parse_request_body(raw)
        return raw.decode("utf-8"), data

    @property
    def role(self) -> str:
        """The caller's effective role in the organization (an API key's is capped by its creator's)."""
        return self.request._request.role
