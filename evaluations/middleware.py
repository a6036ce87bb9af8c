"""Middleware: request bodies the platform cannot read, and the dashboard's no-organization page."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render

#: Paths that answer in the JSON error envelope (each with everything below it).
JSON_ROOTS = ("/v1", "/agents", "/oauth")
#: Methods whose requests carry a body.
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def _drain(request, chunk: int = 64 * 1024) -> None:
    """Read and drop up to twice the request size limit of the unread body, so a client still sending it reads the
    answer instead of a broken pipe (a field case: a 1.1 MB chunked POST got EPIPE); beyond that the server closes
    the connection. The WSGI server decodes the chunked framing."""
    stream, left = request.META.get("wsgi.input"), 2 * settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        while stream is not None and left > 0 and (data := stream.read(min(chunk, left))):
            left -= len(data)
    except Exception:  # noqa: BLE001 - best effort: the 411 goes out either way
        pass


class LengthRequiredMiddleware:
    """A body sent without ``Content-Length`` (``Transfer-Encoding: chunked``) is a 411 naming the header.

    Django reads exactly ``Content-Length`` bytes of a WSGI body, so such a body used to arrive empty: a valid
    JSON document was answered "not valid JSON", and an oversized one escaped the 413. JSON paths get the error
    envelope; other paths a plain-text 411."""

    MESSAGE = "send the request body with a Content-Length header; chunked transfer encoding is not supported"

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (request.method in BODY_METHODS and request.META.get("HTTP_TRANSFER_ENCODING")
                and not request.META.get("CONTENT_LENGTH")):
            _drain(request)
            if any(request.path == root or request.path.startswith(root + "/") for root in JSON_ROOTS):
                from .api.exceptions import docs_url  # the API's modules load after the middleware's

                body = {"error": {"code": "length_required", "message": self.MESSAGE,
                                  "details": [{"path": "$", "message": self.MESSAGE}], "docs": docs_url("length_required")}}
                return JsonResponse(body, status=411)
            return HttpResponse(self.MESSAGE, status=411, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class NoOrganizationMiddleware:
    """Turn ``views.NoOrganization`` into a page that says what to do instead of a bare 404."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from .tenancy import NoOrganization

        if isinstance(exception, NoOrganization):
            return render(request, "evaluations/no_organization.html", status=403)
        return None
