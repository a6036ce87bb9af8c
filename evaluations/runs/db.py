"""Database writes of the shard loop that survive the database going away for a moment (a PostgreSQL restart, a
failover): the operation is retried on a fresh connection with backoff for up to ``RLMESH_DB_RETRY_SECONDS``.

Only operations that are safe to repeat are wrapped: each is one transaction or a conditional UPDATE, so a retry after
a commit whose answer was lost finds the row already written and changes nothing.
"""

from __future__ import annotations

import functools
import logging
import time

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection

__all__ = ["survives_restarts"]

logger = logging.getLogger(__name__)

#: Seconds between attempts: quick at first (a restart takes ~0.2 s), then every 2 s.
BACKOFF = (0.2, 0.5, 1.0, 2.0)


def _reset_connection() -> None:
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - a dead connection may fail to close; a new one is opened on next use
        pass
    close_old_connections()


def survives_restarts(fn):
    """Decorator: retry ``fn`` on OperationalError/InterfaceError (the connection was lost) with a new connection,
    until ``RLMESH_DB_RETRY_SECONDS`` have passed; then the last error is raised. Not inside an outer transaction:
    a broken transaction cannot be retried from within."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        deadline = time.monotonic() + settings.RLMESH_DB_RETRY_SECONDS
        attempt = 0
        while True:
            try:
                return fn(*args, **kwargs)
            except (OperationalError, InterfaceError) as exc:
                if connection.in_atomic_block or time.monotonic() >= deadline:
                    raise
                pause = BACKOFF[min(attempt, len(BACKOFF) - 1)]
                logger.warning("%s: database unavailable (%s); retrying in %.1f s", fn.__name__, exc, pause)
                time.sleep(pause)
                _reset_connection()
                attempt += 1

    return wrapper
