"""Model servers shared by the shards of one evaluation on one host that run one model the same way
(:func:`model_key`): an rlmesh model server takes many sessions at once (spec/ENVS.md: 4 sessions on one model server
gave 3.1x the steps/s of one), so the second shard on a host uses the first one's server instead of loading the model
again (one copy of the weights per host, one batcher for every episode: ``prebuilt.lerobot.batching``).

Each worker process that uses a shared server holds a lease on it. The registry is a small JSON file per key in
``RLMESH_RUN_DIR/shared/``, read and written under an exclusive ``flock`` (so pool processes of every worker on the
host agree): the server's pid and start time, address, log file, the pid of the process that started it (its owner)
and the leases (``"<pid>:<token>"``, one per lease, so two runners in one process hold two). The last lease released
stops the server; leases of processes that died without releasing do not count. The server dies with its owner
(``PR_SET_PDEATHSIG``); the others then see it gone (:meth:`SharedServer.orphaned`: an episode it broke is not the
model's failure and runs again), and the next of them to need it starts a fresh one. Local sources only (containers
are not shared).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from .base import RuntimeBackendError, ServedEndpoint, stats_path
from .processes import pid_alive, start_time

__all__ = ["SharedServer", "acquire", "model_key"]

#: Seconds a shared server has to exit after its last lease's SIGTERM before it is killed (a batched image's owner
#: removes its container in that time).
STOP_GRACE = 10.0


def _dir() -> Path:
    path = Path(settings.RLMESH_RUN_DIR) / "shared"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def _registry(key: str):
    """The registry entry of ``key`` (a dict, ``{}`` when none) under the host-wide lock; written back on exit."""
    with open(_dir() / f"{key}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = _dir() / f"{key}.json"
        try:
            state = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError):
            state = {}
        yield state
        if state:
            path.write_text(json.dumps(state))
        elif path.exists():
            path.unlink()


def _alive(state: dict) -> bool:
    return bool(state) and start_time(state["pid"]) == state["start"]


class SharedServer(ServedEndpoint):
    """A lease on a shared model server: ``stop()`` releases the lease (the last one stops the server)."""

    def __init__(self, key: str, state: dict, ready_seconds: float):
        self.key = key
        self.pid = state["pid"]
        self._start = state["start"]
        self.address = state["address"]
        self._log = Path(state["log"])
        self.stats_path = stats_path(self._log)
        self.ready_seconds = ready_seconds
        #: The process that started the server (it dies with that process); None in registries of older versions.
        self.owner: int | None = state.get("owner")
        self.lease: str = state["leases"][-1] if state.get("leases") else ""
        self._sock_dir: str | None = state.get("sockDir")
        #: Whether :func:`acquire` found it running (else it started it just now).
        self.reused = False
        self._released = False

    def alive(self) -> bool:
        return start_time(self.pid) == self._start

    def orphaned(self) -> bool:
        """Whether the server is gone because its owner, another process, died (killed worker, OOM): then what it
        broke is no fault of the model."""
        return (not self.alive() and self.owner is not None and self.owner != os.getpid()
                and not pid_alive(self.owner))

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self._released:
            return
        self._released = True
        with _registry(self.key) as state:
            if not state or state["pid"] != self.pid:
                return  # replaced meanwhile: that server is someone else's business
            # Leases of processes that died without releasing do not keep the server alive.
            state["leases"] = [lease for lease in state["leases"] if lease != self.lease and pid_alive(_holder(lease))]
            if state["leases"]:
                return
            state.clear()
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """Kill the server whatever leases it has (it is wedged: every lease on it is useless) and forget it, so the
        next :func:`acquire` starts another; the other shards see it gone and restart their model."""
        self._released = True
        with _registry(self.key) as state:
            if state and state.get("pid") == self.pid:
                state.clear()
        # SIGTERM first (then SIGKILL past the grace): a batched image's server is the local process that owns its
        # container, and removes the wedged container when told to stop; a SIGKILL would leave it running.
        self._end(signal.SIGTERM)

    def _end(self, sig: int) -> None:
        """Send ``sig`` to the server's process group while it is still this server (its pid not reused), and
        remove its socket's directory (the worker that started it may live on long after). A server still there
        :data:`STOP_GRACE` seconds after a SIGTERM is killed: a stopped or wedged one never handles it (found by a
        fresh user: a ``SIGSTOP``-ed inference process outlived its evaluation, its SIGTERM pending)."""
        if self.alive():
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + STOP_GRACE
            while sig != signal.SIGKILL and self.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            if self.alive():
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self._sock_dir:
            shutil.rmtree(self._sock_dir, ignore_errors=True)


def _holder(lease) -> int:
    """The pid holding ``lease`` (``"<pid>:<token>"``; a bare pid in registries of older versions)."""
    return int(str(lease).split(":", 1)[0])


def _new_lease() -> str:
    return f"{os.getpid()}:{uuid.uuid4().hex[:8]}"


def model_key(evaluation_pk: int, spec) -> str:
    """The registry key of the model server an evaluation's shards share on a host: one per evaluation and way of
    serving the model (``spec``'s source, load kwargs, environment and secrets, hashed), so the workloads of one
    model on many tasks share it, and a model run another way (another checkpoint, batch shape or key) does not."""
    identity = json.dumps([spec.source, spec.kwargs, spec.env_vars, spec.secrets], sort_keys=True, default=str)
    return f"model-{evaluation_pk}-{hashlib.sha256(identity.encode()).hexdigest()[:24]}"


def acquire(key: str, start) -> SharedServer:
    """A lease on the shared server ``key``: the running one, or one ``start()`` starts now (a LocalServer whose process
    handle has ``pid``). Raises whatever ``start`` raises."""
    with _registry(key) as state:
        if _alive(state):
            state["leases"] = [*state["leases"], _new_lease()]
            reused = SharedServer(key, state, ready_seconds=0.0)
            reused.reused = True
            return reused
        server = start()
        started = start_time(server.proc.pid)
        if started is None:  # gone already: recorded, a dead server would pass for alive (None == None)
            tail = server.stop_with_output()
            raise RuntimeBackendError("the shared server exited right after it became ready", log_tail=tail)
        state.clear()
        state.update({"pid": server.proc.pid, "start": started, "address": server.address,
                      "log": str(server.log_path), "owner": os.getpid(), "leases": [_new_lease()],
                      "sockDir": getattr(server, "_sock_dir", None)})
        return SharedServer(key, state, ready_seconds=server.ready_seconds)
