"""Request parsing for /v1: JSON bodies size-limited with errors in the envelope, and result bundles (zip bodies)
spooled to disk."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.files.uploadedfile import TemporaryUploadedFile
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


_FILENAME = re.compile(r"""filename\*?=(?:UTF-8'')?"?([^";]+)"?""", re.IGNORECASE)


class ZipBodyParser(parsers.BaseParser):
    """A raw ``application/zip`` body, spooled to a temporary file (never held in memory).

    Returns a TemporaryUploadedFile named after ``Content-Disposition``'s filename (else ``bundle.zip``), or
    None for an empty body. Raises PayloadTooLarge past ``RLMESH_IMPORT_MAX_BYTES``.
    """

    media_type = "application/zip"

    def parse(self, stream, media_type=None, parser_context=None):
        if stream is None:
            return None
        request = parser_context["request"]
        match = _FILENAME.search(request.META.get("HTTP_CONTENT_DISPOSITION", ""))
        upload = TemporaryUploadedFile(match.group(1) if match else "bundle.zip", self.media_type, 0, None)
        limit, size = settings.RLMESH_IMPORT_MAX_BYTES, 0
        while chunk := stream.read(1024 * 1024):
            size += len(chunk)
            if size > limit:
                upload.close()
                raise PayloadTooLarge(f"the bundle is larger than {limit} bytes (RLMESH_IMPORT_MAX_BYTES)")
            upload.write(chunk)
        upload.size = size
        upload.seek(0)
        return upload


class OctetStreamZipBodyParser(ZipBodyParser):
    media_type = "application/octet-stream"
