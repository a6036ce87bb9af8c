"""Host-wide admission of env servers that declare their memory (``MEMORY_LABEL``, e.g. LIBERO at 3 GiB each).

The planner caps how many parallel workers one workload asks for (``planning.rendering.concurrency_cap``), but the
shards of many workloads — and of several Celery workers on one machine — may all start such an env at once: eight
LIBERO env servers hold ~20 GB, and a 24 GB host then stalls (its web server stops answering within the CLI's 30 s).
So before a shard starts one, it reserves the env's declared bytes in a ledger every process on the host shares: a
JSON file under a lock (``fcntl.flock``), at ``RLMESH_HOST_MEMORY_LEDGER`` (setting or env var; default
``/dev/shm/rlmesh-env-memory.json``, else the temp dir). A reservation is admitted while the reserved total stays
within the budget (``RLMESH_ENV_MEMORY_FRACTION`` × the host's memory), and always when nothing else is reserved,
so an env larger than the budget still runs, alone. Entries of processes that died (a killed worker) are dropped at
the next look: each names its process by pid and start time, so a reused pid does not keep one. Model servers are
counted too (:meth:`HostMemoryLedger.record`), once each, named by the server's own process.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

__all__ = ["HostMemoryLedger", "Reservation", "default_ledger_path"]


def default_ledger_path() -> Path:
    """``RLMESH_HOST_MEMORY_LEDGER`` (setting or env var), else ``/dev/shm/rlmesh-env-memory.json`` (shared memory:
    host-local, gone at reboot), else the same name in the temp dir."""
    configured = getattr(settings, "RLMESH_HOST_MEMORY_LEDGER", None) or os.environ.get("RLMESH_HOST_MEMORY_LEDGER")
    if configured:
        return Path(configured)
    base = Path("/dev/shm") if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
    return base / "rlmesh-env-memory.json"


def _process_start(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass
class Reservation:
    """Bytes held in the ledger for one env server; ``release()`` gives them back (idempotent)."""

    ledger: HostMemoryLedger
    key: str
    nbytes: int
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.ledger._remove(self.key)


class HostMemoryLedger:
    """The ledger at ``path`` with a budget of ``budget_bytes``. ``reserve`` waits for room; ``held`` lists entries."""

    def __init__(self, path: Path, budget_bytes: int):
        self.path = Path(path)
        self.budget_bytes = int(budget_bytes)

    @contextmanager
    def _locked(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                try:
                    entries = json.loads(self.path.read_text() or "{}")
                except (OSError, ValueError):
                    entries = {}  # missing, or torn by a crash mid-write: start over (the live re-reserve)
                live = {k: v for k, v in entries.items() if _process_start(v["pid"]) == v["start"]}
                yield live
                tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(live))
                os.replace(tmp, self.path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def held(self) -> dict[str, dict]:
        """The live reservations: ``{key: {"pid", "start", "bytes", "what", "since"}}`` (``since``: Unix seconds)."""
        with self._locked() as entries:
            return dict(entries)

    def try_reserve(self, nbytes: int, what: str) -> Reservation | None:
        """Reserve ``nbytes`` for ``what`` (e.g. ``"prebuilt/libero (libero_object/0)"``) if they fit the budget, or
        nothing else is reserved; None when they do not fit now."""
        pid = os.getpid()
        with self._locked() as entries:
            total = sum(e["bytes"] for e in entries.values())
            if entries and total + nbytes > self.budget_bytes:
                return None
            key = f"{pid}:{uuid.uuid4().hex[:8]}"
            entries[key] = {"pid": pid, "start": _process_start(pid), "bytes": int(nbytes), "what": what,
                            "since": time.time()}
        return Reservation(self, key, int(nbytes))

    def reserve(self, nbytes: int, what: str, *, stop: Callable[[], bool], on_wait: Callable[[dict], None] = lambda held: None,
                poll_seconds: float = 2.0) -> Reservation | None:
        """Wait until ``nbytes`` fit, then reserve them; None if ``stop()`` turned true first (checked every
        ``poll_seconds``). ``on_wait(held)`` is called once, with the reservations that are in the way."""
        told = False
        while True:
            reservation = self.try_reserve(nbytes, what)
            if reservation is not None:
                return reservation
            if not told:
                on_wait(self.held())
                told = True
            if stop():
                return None
            time.sleep(poll_seconds)

    def record(self, nbytes: int, what: str, pid: int) -> str:
        """Count ``nbytes`` held by the running process ``pid`` (a model server), whatever the budget, until that
        process exits: what it holds is held already, so nothing waits for it, but the envs admitted after it see
        it. Returns the entry's key. A shared model server is recorded once, by the process that started it."""
        with self._locked() as entries:
            key = f"{pid}:{uuid.uuid4().hex[:8]}"
            entries[key] = {"pid": pid, "start": _process_start(pid), "bytes": int(nbytes), "what": what,
                            "since": time.time()}
        return key

    def _remove(self, key: str) -> None:
        with self._locked() as entries:
            entries.pop(key, None)
