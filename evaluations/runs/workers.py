"""Worker processes announce they are alive, so the reaper on any host knows at once when one died (kill -9, a lost
host, SIGSTOP), and tidy what dead processes of their own host left behind (local server socket directories).

Each Celery pool process starts a daemon thread at start-up (``evaluations.tasks``) that upserts its
:class:`~evaluations.models.WorkerProcess` row every ``RLMESH_WORKER_HEARTBEAT_SECONDS``.
"""

from __future__ import annotations

import logging
import os
import threading

from django.conf import settings
from django.db import connection
from django.utils import timezone

from ..models import WorkerProcess
from ..runtime.reaper import reap_socket_dirs

__all__ = ["LivenessThread", "live_identities", "mark", "worker_identity"]

logger = logging.getLogger(__name__)
#: Socket directories of dead processes are swept every this many heartbeats.
SWEEP_EVERY = 12


def worker_identity() -> str:
    """``host:pid`` of this process (``RLMESH_HOSTNAME``), recorded on the shards it claims."""
    return f"{settings.RLMESH_HOSTNAME}:{os.getpid()}"


def beat() -> None:
    """Record that this process is alive now (creates its row the first time)."""
    now = timezone.now()
    updated = WorkerProcess.objects.filter(identity=worker_identity()).update(last_seen=now)
    if not updated:
        WorkerProcess.objects.update_or_create(
            identity=worker_identity(),
            defaults={"hostname": settings.RLMESH_HOSTNAME, "pid": os.getpid(), "started_at": now, "last_seen": now,
                      "idle_since": now, "busy_since": None},
        )


def mark(*, busy: bool) -> None:
    """Record that this process started (``busy``) or finished running a shard."""
    now = timezone.now()
    fields = {"busy_since": now, "idle_since": None} if busy else {"busy_since": None, "idle_since": now}
    WorkerProcess.objects.filter(identity=worker_identity()).update(last_seen=now, **fields)


def live_identities() -> set[str]:
    """Identities of the processes seen within ``RLMESH_WORKER_LIVENESS_TIMEOUT``."""
    since = timezone.now() - timezone.timedelta(seconds=settings.RLMESH_WORKER_LIVENESS_TIMEOUT)
    return set(WorkerProcess.objects.filter(last_seen__gte=since).values_list("identity", flat=True))


class LivenessThread(threading.Thread):
    """Daemon thread: ``beat()`` every ``RLMESH_WORKER_HEARTBEAT_SECONDS``; every ``SWEEP_EVERY`` beats, remove this
    host's socket directories whose server process is gone. A database error is logged and the next beat tries
    again (a process that cannot reach the database looks dead, which is right: it cannot record episodes either)."""

    def __init__(self):
        super().__init__(daemon=True, name="rlmesh-liveness")
        self.stopped = threading.Event()

    def run(self) -> None:
        beats = 0
        while True:
            try:
                beat()
                if beats % SWEEP_EVERY == 0:
                    reap_socket_dirs()
            except Exception:  # noqa: BLE001 - see the docstring
                logger.warning("worker liveness beat failed", exc_info=True)
                connection.close()
            beats += 1
            if self.stopped.wait(settings.RLMESH_WORKER_HEARTBEAT_SECONDS):
                connection.close()
                return
