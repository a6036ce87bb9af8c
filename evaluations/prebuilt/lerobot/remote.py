"""The thin model server's side of the host's inference process (:mod:`.inference` describes both): the address, the
shared key and the client. No torch, no checkpoint: what a thin server imports."""

from __future__ import annotations

import json
import os
import pickle
import socket
import struct
import threading
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge

import numpy as np

__all__ = ["HANDSHAKE_TIMEOUT", "KEY_ENV", "InferenceClient", "address_path", "handshake", "shared_key"]

#: The environment variable holding the shared key of a host's inference process and its thin servers.
KEY_ENV = "RLMESH_INFERENCE_KEY"
#: Seconds a thin server waits for its actions before the call fails (a forward pass of a VLA on a loaded CPU host
#: takes seconds; an hour-long wait is a hung process, and the episode ends in error rather than hang with it).
REPLY_TIMEOUT = 600.0
#: Seconds a connection's opening (connect, and the HMAC challenge both ways) may take, on either side; a peer that
#: connects and then says nothing holds nobody else up past this.
HANDSHAKE_TIMEOUT = 10.0


def _io_timeout(sock: socket.socket, seconds: float) -> None:
    """Bound each blocking read and write on ``sock`` (``SO_RCVTIMEO``/``SO_SNDTIMEO``; 0: no bound): the fd stays
    blocking, as :class:`multiprocessing.connection.Connection` needs, and a stalled peer raises OSError."""
    value = struct.pack("ll", int(seconds), int((seconds % 1) * 1_000_000))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


def handshake(sock: socket.socket, key: bytes, *, server: bool) -> Connection:
    """``sock`` (connected, blocking) as an authenticated Connection: the HMAC challenge both ways, as
    ``multiprocessing``'s Listener/Client run it, within :data:`HANDSHAKE_TIMEOUT`; afterwards reads and writes are
    unbounded (the caller bounds a reply with ``poll``). Raises AuthenticationError, OSError or EOFError; ``sock``
    is closed then."""
    sock.settimeout(None)
    _io_timeout(sock, HANDSHAKE_TIMEOUT)
    conn = Connection(sock.detach())
    try:
        if server:
            deliver_challenge(conn, key)
            answer_challenge(conn, key)
        else:
            answer_challenge(conn, key)
            deliver_challenge(conn, key)
        with socket.socket(fileno=os.dup(conn.fileno())) as same:  # the options belong to the socket, not the fd
            _io_timeout(same, 0)
    except BaseException:
        conn.close()
        raise
    return conn


def address_path(address: str) -> str:
    """The socket path of a ``unix://…`` address; ValueError for any other."""
    if not address.startswith("unix://"):
        raise ValueError(f"the inference process listens on a unix:// address, not {address!r}")
    return address.removeprefix("unix://")


def shared_key() -> bytes:
    """The key in :data:`KEY_ENV` as bytes; RuntimeError when unset."""
    key = os.environ.get(KEY_ENV, "")
    if not key:
        raise RuntimeError(f"{KEY_ENV} is not set: the platform starts the inference process and its thin servers")
    return key.encode()


class InferenceClient:
    """A thin server's connection to the host's inference process at ``address`` (``unix://…``); opened on first
    use, again after a failure. :meth:`actions` raises RuntimeError with the process's error or the broken link."""

    def __init__(self, address: str, key: bytes | None = None):
        self.path, self.key = address_path(address), key or shared_key()
        self._conn = None
        self._lock = threading.Lock()

    def ping(self, timeout: float = HANDSHAKE_TIMEOUT) -> float:
        """Seconds the oldest request the process is working on has been in it (0.0 when idle), asked on a
        connection of its own and answered without the policy; RuntimeError when the process does not answer
        within ``timeout``."""
        reply = self._call({"ping": True}, timeout, json_reply=True)
        return float(reply["stalledSeconds"])

    def actions(self, episode: str, seed, observation: dict, step: int = 0) -> list[np.ndarray]:
        """The episode's next actions (the module docstring): a list of float32 (7,) arrays, at least one. ``step``:
        how many actions the episode has taken (where a batching type's new chunk starts; it seeds its noise)."""
        request = {"episode": episode, "seed": None if seed is None else int(seed), "step": int(step),
                   "observation": observation}
        reply = self._call(request, REPLY_TIMEOUT)
        actions = np.asarray(reply["actions"], dtype=np.float32)
        return list(actions)

    def request(self, request: dict) -> dict:
        """The process's reply to ``request`` (a dict the process's responder understands) within
        :data:`REPLY_TIMEOUT`; RuntimeError with the process's error or the broken link."""
        return self._call(request, REPLY_TIMEOUT)

    def _call(self, request: dict, timeout: float, *, json_reply: bool = False) -> dict:
        # Plain pickle both ways (never multiprocessing's ForkingPickler, whose torch reductions pass tensors by file
        # descriptor through a helper socket of the sending process: gone across processes and containers). A ping's
        # reply is JSON: the worker pings an image's inference process, which runs the image's code, and never
        # unpickles what such a process sends.
        with self._lock:
            try:
                if self._conn is None:
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        sock.settimeout(HANDSHAKE_TIMEOUT)
                        sock.connect(self.path)
                    except BaseException:
                        sock.close()
                        raise
                    self._conn = handshake(sock, self.key, server=False)
                self._conn.send_bytes(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
                if not self._conn.poll(timeout):
                    raise TimeoutError(f"no answer within {timeout:g} s")
                data = self._conn.recv_bytes()
                reply = json.loads(data) if json_reply else pickle.loads(data)
            except (OSError, EOFError, TimeoutError, AuthenticationError, ValueError, pickle.UnpicklingError) as exc:
                self._drop()
                detail = str(exc) or "the connection closed (the process exited or was stopped)"
                raise RuntimeError(f"the host's inference process is unreachable: {type(exc).__name__}: {detail}") from None
        if "error" in reply:
            raise RuntimeError(f"the host's inference process failed: {reply['error']}")
        return reply

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
        self._conn = None
