"""What every authenticated /v1 view shares: the caller's organization, evaluation lookup scoped to it, and the raw
JSON body."""

from __future__ import annotations

from rest_framework.exceptions import NotAcceptable, NotFound, UnsupportedMediaType
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.views import APIView

from ..models import Evaluation
from ..planning import parse_request_body
from .parsers import check_size
__all__ = ["DownloadNegotiation", "DownloadView", "OrgScopedView", "file_answer"]


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

    def read_optional_body(self) -> dict:
        """The parsed JSON object of a body that may be left empty (``{}`` then), checked as
        :meth:`read_request_body` checks one: its size first (413), never read before."""
        check_size(self.request)
        if not int(self.request.META.get("CONTENT_LENGTH") or 0):
            return {}
        return self.read_request_body()[1]

    @property
    def role(self) -> str:
        """The caller's effective role in the organization (an API key's is capped by its creator's)."""
        return self.request._request.role


class DownloadNegotiation(DefaultContentNegotiation):
    """A file download's negotiation: the file goes out whatever ``Accept`` asks for (``application/zip``,
    ``application/octet-stream``, ``video/mp4``), never a 406; an error the view returns instead is the JSON envelope."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type


class DownloadView(OrgScopedView):
    # A view whose success is a file (a zip, a video): ``DownloadNegotiation``.
    content_negotiation_class = DownloadNegotiation

    def file_answer(self, response, what: str):
        """``response`` of ``media.ranged_file_response``/``file_response``, its 416 and 429 in the error envelope."""
        return file_answer(response, what)


def file_answer(response, what: str):
    """A file response as the API answers it: a 416 (a range outside ``what``) and a 429 (the caller holds all its
    downloads) become the error envelope, with their ``Content-Range``/``Retry-After``; anything else as it is."""
    from django.conf import settings

    from .exceptions import error_response

    if response.status_code == 416:
        size = response["Content-Range"]
        return error_response(416, "range_not_satisfiable", f"the range lies outside the {what} (Content-Range: {size})",
                              headers={"Content-Range": size})
    if response.status_code == 429:
        return error_response(429, "too_many_downloads", f"this caller already holds "
                              f"{settings.RLMESH_DOWNLOADS_PER_CALLER} downloads at once (RLMESH_DOWNLOADS_PER_CALLER); "
                              "ask again when one has ended", headers={"Retry-After": response["Retry-After"]})
    return response
