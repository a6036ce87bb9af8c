"""ASGI entry point, the web server as deployed (``gunicorn -c python:rlmesh_site.gunicorn_conf rlmesh_site.asgi``).

Django runs every view in a thread of its own per request; file transfers are sent from the event loop
(``rlmesh_site.streaming``), so slow downloads hold no thread. In front of Django, :class:`BodyLimits` refuses a
body the platform would refuse anyway before Django reads it into a temporary file: a declared ``Content-Length``
past the largest body any view takes is a 413 at once, and a body without one (chunked) is cut off there.
"""

import json
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rlmesh_site.settings")
# Read by the settings: one thread per request, so database connections are pooled (PostgreSQL) or opened per
# request (SQLite) instead of kept per thread.
os.environ.setdefault("RLMESH_ASGI", "1")

from django.conf import settings  # noqa: E402 - after the environment above
from django.core.asgi import get_asgi_application  # noqa: E402

#: Methods whose requests carry a body.
BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


#: The dashboard's checkpoint upload (evaluations.views.images.checkpoint_upload): its own, larger, limit.
CHECKPOINT_UPLOAD_PATH = "/images/checkpoints"


def largest_body(path: str = "") -> int:
    """Bytes of the largest body a view at ``path`` reads: a checkpoint archive at :data:`CHECKPOINT_UPLOAD_PATH`
    (``RLMESH_CHECKPOINT_UPLOAD_MAX_BYTES``); elsewhere a result bundle (``RLMESH_IMPORT_MAX_BYTES``) or twice a JSON
    body's limit (what a 411 reads and drops); plus a MiB of multipart framing."""
    if path == CHECKPOINT_UPLOAD_PATH:
        return settings.RLMESH_CHECKPOINT_UPLOAD_MAX_BYTES + 2**20
    return max(settings.RLMESH_IMPORT_MAX_BYTES, 2 * settings.DATA_UPLOAD_MAX_MEMORY_SIZE) + 2**20


class BodyLimits:
    """ASGI middleware: a request body past :func:`largest_body` never reaches Django (the module docstring)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") not in BODY_METHODS:
            return await self.app(scope, receive, send)
        limit = largest_body(scope.get("path", ""))
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > limit:
            return await self._too_large(scope, send, int(declared), limit)
        received = 0

        async def bounded_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:  # a chunked body past the limit: the client is dropped
                    return {"type": "http.disconnect"}
            return message

        return await self.app(scope, bounded_receive, send)

    @staticmethod
    async def _too_large(scope, send, declared: int, limit: int) -> None:
        message = f"request body is {declared} bytes; the largest any request may send is {limit}"
        body = json.dumps({"error": {"code": "payload_too_large", "message": message,
                                     "details": [{"path": "$", "message": message}]}}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


application = BodyLimits(get_asgi_application())
