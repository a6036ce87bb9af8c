"""Request parsing for /v1: JSON only, size-limited, errors in the envelope."""

from __future__ import annotations

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import APIException


class PayloadTooLarge(APIException):
    status_code = 413
    default_code = "payload_too_large"
    default_detail = "request body too large"


def check_size(request) -> None:
    """Raise PayloadTooLarge when Content-Length exceeds ``DATA_UPLOAD_MAX_MEMORY_SIZE``."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if limit and length > limit:
        raise PayloadTooLarge(f"request body is {length} bytes; the limit is {limit}")


class StrictJSONParser(parsers.JSONParser):
    """DRF's JSON parser behind a size check."""

    def parse(self, stream, media_type=None, parser_context=None):
        check_size(parser_context["request"])
        return super().parse(stream, media_type, parser_context)
