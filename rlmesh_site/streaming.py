"""File transfers that hold no request thread (the first middleware of the stack).

Under ASGI (``rlmesh_site.asgi``, the web server as deployed) Django runs each request's view in a thread and hands
the response to the event loop; a streaming response with a *synchronous* iterator (``FileResponse`` — dataset zips,
videos, run outputs, screenshots, the manual, WhiteNoise's static files) would be read whole into memory by Django
first (``StreamingHttpResponse.__aiter__``). This middleware gives such a response an asynchronous iterator instead:
each chunk is read in a worker thread (``anyio.to_thread``, a few microseconds from the page cache) and sent from the
event loop, which waits on the client's socket with no thread held. A slow reader then costs an open file and a
socket, never one of the threads every other request needs. The request's database connection is given back before
the transfer starts. Under WSGI (the test client, ``runserver``) it is not installed.
"""

from __future__ import annotations

from asgiref.sync import markcoroutinefunction, sync_to_async
from django import db

__all__ = ["AsyncFileStreamingMiddleware", "read_in_thread"]

_END = object()


async def read_in_thread(iterator):
    """The items of the synchronous ``iterator``, each fetched in a worker thread; closes it when done or abandoned."""
    import anyio.to_thread

    try:
        while (chunk := await anyio.to_thread.run_sync(next, iterator, _END)) is not _END:
            yield chunk
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            await anyio.to_thread.run_sync(close)


class AsyncFileStreamingMiddleware:
    """Stream synchronous streaming responses from the event loop under ASGI (the module docstring). Async only:
    the settings list it first, and only under ASGI (``RLMESH_ASGI``), so everything below it runs in the request's
    thread as one adapted sync chain."""

    sync_capable = False
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        markcoroutinefunction(self)

    async def __call__(self, request):
        response = await self.get_response(request)
        if getattr(response, "streaming", False) and not getattr(response, "is_async", True):
            # The transfer needs no database: give the connection back now (it is pooled or closed per request).
            await sync_to_async(db.close_old_connections)()
            response.streaming_content = read_in_thread(iter(response.streaming_content))
        return response
