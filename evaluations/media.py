"""Serving stored files (episode videos, dataset zips, run outputs) with HTTP range requests (RFC 9110 §14), so
browsers can seek in a video, and with a bound on the downloads one caller holds at once.

Media live in Django's default storage (filesystem or any backend); the views that call this check the
organization first. Only single ranges are honoured; a multi-range request gets the whole file (allowed by the RFC).

A transfer never holds a request thread: the site runs under ASGI and ``rlmesh_site.streaming`` sends a file's
chunks from the event loop, so slow readers wait on their sockets, not on the server's threads. Each caller (an API
key, else a signed-in user, else an address) holds at most ``RLMESH_DOWNLOADS_PER_CALLER`` downloads at once on a
web host: one more is a 429 (``too_many_downloads``) until one ends. The slots are ``flock`` locks on files under
``RLMESH_RUN_DIR/downloads``, released when the response closes or its process dies.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re

from django.conf import settings
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse

__all__ = ["DOWNLOADS_BUSY", "download_slot", "episode_video_response", "file_response", "parse_range",
           "ranged_file_response"]

#: The reason phrase of the 429 a caller past ``RLMESH_DOWNLOADS_PER_CALLER`` gets (the API wraps it in its envelope).
DOWNLOADS_BUSY = "too many downloads at once"

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


def caller(request) -> str:
    """Who holds a download: ``key:<id>`` for an API key, ``user:<id>`` for a signed-in user (a session or an
    access token), else ``addr:<client address>``."""
    auth = getattr(request, "auth", None)
    if auth is not None and type(auth).__name__ == "ApiKey":
        return f"key:{auth.pk}"
    user = getattr(request, "user", None)
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.pk}"
    return f"addr:{request.META.get('REMOTE_ADDR', '')}"


def download_slot(request) -> int | None:
    """Take one of the caller's ``RLMESH_DOWNLOADS_PER_CALLER`` download slots on this host: an open file descriptor
    holding its ``flock`` (close it to give the slot back), or None when every slot is taken."""
    folder = settings.RLMESH_RUN_DIR / "downloads"
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(caller(request).encode()).hexdigest()[:24]
    for slot in range(max(1, settings.RLMESH_DOWNLOADS_PER_CALLER)):
        fd = os.open(folder / f"{name}.{slot}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return fd
    return None


def _busy() -> HttpResponse:
    response = HttpResponse(f"{DOWNLOADS_BUSY}: each caller holds at most {settings.RLMESH_DOWNLOADS_PER_CALLER} "
                            "(RLMESH_DOWNLOADS_PER_CALLER); try again when one has ended", status=429,
                            content_type="text/plain; charset=utf-8")
    response["Retry-After"] = "5"
    return response


def file_response(request, fileobj, *, status: int = 200, length: int | None = None, **kwargs) -> HttpResponse:
    """A response streaming the open binary ``fileobj`` (from its position; ``length`` bytes when given) that holds
    one of the caller's download slots until it closes; 429 (``Retry-After: 5``) when the caller holds them all (the
    file is then closed). ``kwargs`` go to ``FileResponse`` (``content_type``, ``as_attachment``, ``filename``)."""
    slot = download_slot(request)
    if slot is None:
        fileobj.close()
        return _busy()
    try:
        if length is None:
            response = FileResponse(fileobj, status=status, **kwargs)
        else:
            response = StreamingHttpResponse(_chunks(fileobj, length), status=status,
                                             content_type=kwargs.get("content_type"))
    except BaseException:
        os.close(slot)
        fileobj.close()
        raise
    response._resource_closers.append(lambda: os.close(slot))
    return response


def ranged_file_response(request: HttpRequest, name: str, content_type: str = "video/mp4") -> HttpResponse:
    """200 with the whole stored file ``name``, or 206 with the bytes a ``Range: bytes=a-b`` header asks for
    (416 with ``Content-Range: bytes */size`` when the range lies outside the file; 429 past the caller's downloads,
    :func:`file_response`). Always sends ``Accept-Ranges: bytes``. Raises FileNotFoundError if the storage has no
    such file."""
    size = default_storage.size(name)
    wanted = parse_range(request.headers.get("Range", ""), size)
    if wanted == "unsatisfiable":
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    start, end = (0, size - 1) if wanted is None else wanted
    fh = default_storage.open(name, "rb")
    if wanted is None:
        response = file_response(request, fh, content_type=content_type)
    else:
        fh.seek(start)
        response = file_response(request, fh, status=206, length=end - start + 1, content_type=content_type)
        if response.status_code == 206:
            response["Content-Range"] = f"bytes {start}-{end}/{size}"
    if response.status_code in (200, 206):
        response["Accept-Ranges"] = "bytes"
        response["Content-Length"] = str(end - start + 1 if wanted is not None else size)
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
