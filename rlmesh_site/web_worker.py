"""The gunicorn worker class of the web server: uvicorn's ASGI event loop in each gunicorn process
(``uvicorn-worker``), set for this site (``rlmesh_site.gunicorn_conf``)."""

from __future__ import annotations

import os

from uvicorn_worker import UvicornWorker

__all__ = ["Worker"]


class Worker(UvicornWorker):
    """uvicorn in a gunicorn process: asyncio and httptools, no lifespan events (Django has none), no ``Server``
    header, and at most ``RLMESH_WEB_MAX_CONNECTIONS`` connections and requests at once per process (one more is a
    503 at once rather than a queue that grows without bound)."""

    CONFIG_KWARGS = {
        "loop": "asyncio",
        "http": "httptools",
        "lifespan": "off",
        "server_header": False,
        "limit_concurrency": int(os.environ.get("RLMESH_WEB_MAX_CONNECTIONS") or 1000),
    }
