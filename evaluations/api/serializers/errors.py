"""The one error envelope, and the error responses an operation declares (STYLE habit 5)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

__all__ = ["ErrorSerializer", "errors"]


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="machine-readable: invalid_request, invalid_reference, parse_error, unauthenticated, forbidden, "
                                           "not_found, method_not_allowed, not_acceptable, conflict, payload_too_large, "
                                           "unsupported_media_type, range_not_satisfiable, throttled, storage_quota_exceeded, steps_not_recorded, "
                                           "lerobot_unavailable, internal_error")
    message = serializers.CharField(help_text="what the official clients print")
    details = serializers.ListField(child=serializers.DictField(), help_text="[{path, message}] for request errors")
    docs = serializers.URLField(required=False, help_text="the manual's page (under /docs) that explains this error, "
                                                         "where one fits")


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


#: Why each status is returned, unless the operation says more.
_WHEN = {
    400: "The request is invalid: a body that fails validation, or a bad query parameter (cursor, limit, a filter "
         "value); `details` names each offending path.",
    401: "Missing, malformed, unknown, revoked or expired credential (only a 401 makes the CLI refresh its session).",
    403: "The credential's role in the organization cannot do this (viewers read only).",
    404: "No such object in the caller's organization (another organization's objects are simply not found).",
    405: "The path names a route that does not take this method.",
    406: "The Accept header excludes application/json (the clients send */* or application/json).",
    409: "The object's state refuses the change.",
    413: "The request body is over the size limit.",
    415: "The Content-Type is not one the operation accepts.",
    416: "The Range lies outside the file.",
    501: "Not available on this installation (the reason says what is missing).",
    503: "A component this operation needs is not installed on this platform (the message names the setup script).",
    429: "Too many requests from this address or user: failed authentications (RATELIMIT_AUTH_FAILURES) or, where an "
         "operation says so, its own rate; retry after `Retry-After` seconds.",
}


def errors(*codes: int, **when: str) -> dict[int, OpenApiResponse]:
    """The ``responses`` entries for ``codes`` and 406 (content negotiation runs before any view code, so every
    operation may answer it), plus 429 wherever 401 is possible (failed authentications are rate limited per
    address), each the error envelope; ``when`` overrides a description by ``_<code>`` (e.g.
    ``_409="the evaluation already finished"``)."""
    implied = {406} | ({429} if 401 in codes else set())
    return {code: OpenApiResponse(ErrorSerializer, description=when.get(f"_{code}", _WHEN[code]))
            for code in sorted({*codes, *implied})}
