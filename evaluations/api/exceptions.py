"""One error envelope for every /v1 error: ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ..planning.schema import flatten_errors
from ..planning import RequestInvalid
from ..planning.parse import MAX_ERROR_TEXT, bounded_errors
from .parsers import PayloadTooLarge

logger = logging.getLogger(__name__)


#: The manual's page that explains each error code, where one fits (``docs`` in the envelope; served under /docs).
DOCS_PAGES = {
    "invalid_request": "using/request/",
    "parse_error": "using/request/",
    "length_required": "using/request/",
    "unsupported_media_type": "using/request/",
    "payload_too_large": "using/request/",
    "invalid_reference": "using/images/",
    "unauthenticated": "using/cli-login/",
    "forbidden": "using/cli-login/",
    "invalid_bundle": "using/imports/",
    "storage_quota_exceeded": "running/settings/",
    "throttled": "running/settings/",
}


def docs_url(code: str) -> str | None:
    """Absolute URL of the manual page for an error ``code`` (PUBLIC_URL + /docs/…), or None when no page fits."""
    page = DOCS_PAGES.get(code)
    return f"{settings.PUBLIC_URL.rstrip('/')}/docs/{page}" if page else None


def error_response(status_code: int, code: str, message: str, details=None, headers=None, *, docs: str | None = None) -> Response:
    """Build the envelope; the single place error bodies are shaped. Details are bounded (``bounded_errors``);
    ``docs`` links the manual's page for the code where one fits (``docs``: a page of its own, e.g. the query
    parameters' page for a bad filter)."""
    body = {"error": {"code": code, "message": message[:4 * MAX_ERROR_TEXT],
                      "details": bounded_errors(details) if details is not None else []}}
    if link := (f"{settings.PUBLIC_URL.rstrip('/')}/docs/{docs}" if docs else docs_url(code)):
        body["error"]["docs"] = link
    return Response(body, status=status_code, headers=headers)


class NotFound(exceptions.NotFound):
    default_code = "not_found"


def exception_handler(exc, context):
    """DRF exception handler producing the envelope; unexpected errors become a logged 500 in the envelope."""
    if isinstance(exc, RequestInvalid):
        return error_response(exc.status, exc.code, str(exc), exc.errors)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    if isinstance(exc, RequestDataTooBig):  # a body read before its size was checked: still the 413, never a 500
        exc = PayloadTooLarge(f"request body is over the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
    response = drf_exception_handler(exc, context)
    if response is None:
        logger.exception("unhandled error in %s", context.get("view"))
        return error_response(500, "internal_error", "internal server error")
    detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
    if isinstance(exc, exceptions.ValidationError):
        errors = flatten_errors(detail)
        first = errors[0] if errors else {"path": "$", "message": "invalid request"}
        message = f"{first['path']}: {first['message']}" if first["path"] != "$" else first["message"]
        # A bad query parameter (a GET's filters, cursor, groupBy) is explained on the filters page, not the request's.
        request = context.get("request")
        page = "using/search-and-filters/" if request is not None and request.method in ("GET", "HEAD") else None
        return error_response(400, "invalid_request", message, errors, headers=_auth_headers(response), docs=page)
    if isinstance(exc, exceptions.ParseError):
        return error_response(400, "parse_error", f"request body is not valid JSON: {detail}", [{"path": "$", "message": str(detail)}])
    code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
    if response.status_code == status.HTTP_401_UNAUTHORIZED:
        code = "unauthenticated"
    elif response.status_code == status.HTTP_403_FORBIDDEN:
        code = "forbidden"
    # An exception may name a page of its own (``docs_page``: an import's 415 is explained on the imports page).
    return error_response(response.status_code, str(code), str(detail), headers=_auth_headers(response),
                          docs=getattr(exc, "docs_page", None))


def _auth_headers(response) -> dict:
    return {k: v for k, v in response.items() if k in ("WWW-Authenticate", "Allow", "Retry-After")}
