"""Serving stored episode media with HTTP range requests (RFC 9110 §14), so browsers can seek in a video.

Media live in Django's default storage (filesystem or any backend); the views that call this check the
organization first. Only single ranges are honoured; a multi-range request gets the whole file (allowed by the RFC).
"""

from __future__ import annotations

import re

from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse

__all__ = ["episode_video_response", "parse_range", "ranged_file_response"]

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
CHUNK = 64 * 1024
#: Longer positions than this many digits are beyond any file (and beyond what int() may parse).
_MAX_DIGITS = 18


def _position(digits: str) -> int | None:
    """A byte position of a Range header: None when absent, ``2**63`` for one too long to be a real offset."""
    if not digits:
        return None
    return 2**63 if len(digits) > _MAX_DIGITS else int(digits)


def parse_range(header: str, size: int) -> tuple[int, int] | str | None:
    """The single byte range ``header`` asks for in a file of ``size`` bytes, per RFC 9110 §14.1.2: ``(first, last)``
    (inclusive, clamped to the file), ``"unsatisfiable"`` when it starts past the end, or None when the header is
    absent, not a single ``bytes=`` range, or invalid (e.g. ``bytes=5-2``) — the whole file is then sent."""
    match = _RANGE.match(header.strip())
    if not match or not (match[1] or match[2]):
        return None
    first, last = _position(match[1]), _position(match[2])
    if first is None:  # suffix range: the last N bytes
        return (max(0, size - last), size - 1) if last and size else "unsatisfiable"
    if last is not None and last < first:
        return None
    if first >= size:
        return "unsatisfiable"
    return first, size - 1 if last is None else min(last, size - 1)


def _chunks(fh, length: int):
    try:
        while length > 0:
            data = fh.read(min(CHUNK, length))
            if not data:
                break
            length -= len(data)
            yield data
    finally:
        fh.close()


def ranged_file_response(request: HttpRequest, name: str, content_type: str = "video/mp4") -> HttpResponse:
    """200 with the whole stored file ``name``, or 206 with the bytes a ``Range: bytes=a-b`` header asks for
    (416 with ``Content-Range: bytes */size`` when the range lies outside the file). Always sends
    ``Accept-Ranges: bytes``. Raises FileNotFoundError if the storage has no such file."""
    size = default_storage.size(name)
    wanted = parse_range(request.headers.get("Range", ""), size)
    if wanted is None:
        response = FileResponse(default_storage.open(name, "rb"), content_type=content_type)
        response["Accept-Ranges"] = "bytes"
        response["Content-Length"] = str(size)
        return response
    if wanted == "unsatisfiable":
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    start, end = wanted
    fh = default_storage.open(name, "rb")
    fh.seek(start)
    response = StreamingHttpResponse(_chunks(fh, end - start + 1), status=206, content_type=content_type)
    response["Content-Range"] = f"bytes {start}-{end}/{size}"
    response["Content-Length"] = str(end - start + 1)
    response["Accept-Ranges"] = "bytes"
    return response


def episode_video_response(request: HttpRequest, evaluation, episode_id: int) -> HttpResponse:
    """The video of episode ``episode_id`` of ``evaluation`` (already scoped to the caller's organization) as a
    ranged response; Http404 when the episode has none or its file is gone from storage."""
    episode = evaluation.episodes.filter(pk=episode_id).only("pk", "video").first()
    if episode is None:
        raise Http404(f"evaluation {evaluation.public_id} has no episode {episode_id}")
    if not episode.video:
        raise Http404(f"episode {episode_id} has no video")
    try:
        return ranged_file_response(request, episode.video.name)
    except FileNotFoundError:
        raise Http404("the video file is missing from storage") from None
