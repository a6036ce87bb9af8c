"""The contract every runtime backend implements."""

from __future__ import annotations

from pathlib import Path

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field


class RuntimeBackendError(Exception):
    """A server could not be started or reached. ``permanent=False`` means a retry may succeed."""

    def __init__(self, message: str, *, permanent: bool = True, log_tail: str = ""):
        super().__init__(message)
        self.permanent = permanent
        self.log_tail = log_tail


@dataclass(frozen=True)
class ServerSpec:
    """What to serve: ``kind`` ``"env"``, ``"model"`` or ``"inference"`` (a host's inference process, local only), a
    ``source`` such as ``python://module:Target``,
    the make/load ``kwargs`` (``--kwargs-json``) and extra environment variables for the process: ``env_vars``
    from the request (containers only) and ``secrets``, variables only the platform names (the endpoint bridge's
    key), which every runtime sets on the server and nothing prints."""

    kind: str
    source: str
    kwargs: dict = field(default_factory=dict)
    env_vars: dict = field(default_factory=dict)
    secrets: dict = field(default_factory=dict, repr=False)
    #: Seconds the server may take to become ready, when its image declares more than
    #: ``settings.RLMESH_SERVER_READY_TIMEOUT`` (LIBERO builds a robosuite scene before it listens); None: the setting.
    ready_timeout: float | None = None
    #: A thin model server's host inference process (``runtime.inference``) in a container: the host folder holding
    #: its socket, mounted into the thin server's container (``runtime.docker``); None otherwise.
    hub_dir: str | None = None

    @property
    def ready_limit(self) -> float:
        from django.conf import settings

        return max(settings.RLMESH_SERVER_READY_TIMEOUT, self.ready_timeout or 0.0)


class ServedEndpoint(ABC):
    """A running server: ``address`` is what rlmesh clients dial (``unix://…`` or ``host:port``)."""

    address: str
    #: Seconds from start to the first successful handshake.
    ready_seconds: float
    #: True when the server's output is gone once it is stopped (a removed container): callers that want to keep
    #: its last lines read ``log_tail`` before ``stop``.
    output_lost_on_stop: bool = False

    @abstractmethod
    def alive(self) -> bool:
        """True while the server process/container runs."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the server and free its resources; idempotent, never raises."""

    @abstractmethod
    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the server's output so far (a running server may still add to it)."""

    #: Where a local model server writes the batch sizes it has seen (``prebuilt.lerobot.batching``), or None.
    stats_path: Path | None = None

    def batch_stats(self) -> dict | None:
        """``{"server", "size", "calls": {rows: count}}``: the forward passes this model server ran by the number of
        episodes' rows in them, since it started; None when it batches nothing (or is not a local model server)."""
        from ..prebuilt.lerobot.batching import read_stats

        stats = read_stats(self.stats_path) if self.stats_path is not None else None
        return {"server": str(self.stats_path), **stats} if stats else None

    def orphaned(self) -> bool:
        """Whether the server is gone because another process it depended on died (a shared server's owner), so
        what it broke is no fault of the model; False for a server of the shard's own."""
        return False

    def final_output(self, lines: int = 20) -> str:
        """The last ``lines`` lines of a server that has exited, complete: backends whose output reaches its store
        after the server is seen exited (a container's log) wait for it, within a bound. Never raises."""
        return self.log_tail(lines)

    def stop_with_output(self, lines: int = 20) -> str:
        """Stop the server (as :meth:`stop`) and return its :meth:`final_output`, read before anything that would
        lose it (a container's removal). Never raises."""
        self.stop()
        return self.final_output(lines)


def stats_path(log_path: Path) -> Path:
    """The batch-size file of the local model server whose output goes to ``log_path`` (beside it)."""
    return log_path.with_name(f"{log_path.stem}.batches.json")


def accepts_connections(address: str, kind: str) -> bool:
    """True once a server at ``address`` is ready for ``kind``.

    An env must answer rlmesh's handshake (not a Join, so it works while another client holds the env);
    anything else only needs its socket open, since ``rlmesh.serve`` (and the inference process) bind after
    ``load()`` returned.
    """
    import socket

    import rlmesh

    try:
        if kind == "env":
            rlmesh.RemoteEnv(address, connect_timeout_seconds=1.0).close()
        elif address.startswith("unix://"):  # the host's inference process listens once its checkpoint is loaded
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(1.0)
                probe.connect(address.removeprefix("unix://"))
        else:
            host, port = address.rsplit(":", 1)
            socket.create_connection((host, int(port)), timeout=1.0).close()
        return True
    except (ConnectionError, OSError, TimeoutError):
        return False


class RuntimeBackend(ABC):
    """Starts env and model servers for shards."""

    @staticmethod
    def become_ready(server: ServedEndpoint, wait, started: float) -> ServedEndpoint:
        """Run ``wait()`` (the backend's readiness loop; it may return the address to dial) and set the server's
        ``ready_seconds`` since the monotonic ``started``; the server is stopped if waiting raises."""
        try:
            address = wait()
        except BaseException:
            server.stop()
            raise
        if address:
            server.address = address
        server.ready_seconds = time.monotonic() - started
        return server

    @abstractmethod
    def start(self, spec: ServerSpec, *, name: str) -> ServedEndpoint:
        """Start ``spec`` and return once it accepts connections.

        Raises RuntimeBackendError (with the server's log tail) if it exits or is not ready within
        ``settings.RLMESH_SERVER_READY_TIMEOUT`` seconds; the server is stopped before raising.
        """
