"""An openpi policy server as an rlmesh model (``python://evaluations.prebuilt.openpi.policy:OpenPIPolicy``).

**The wire**, as ``openpi-client`` 0.1.2's ``WebsocketClientPolicy`` speaks it: one websocket (no compression, no size
limit), ``Authorization: Api-Key <key>`` when a key is set; the server sends its metadata first (a msgpack map);
then each request is one binary frame, the observation packed with ``openpi_client.msgpack_numpy``, and each reply
one binary frame, ``{"actions": (H, action_dim) array, …}``. A text frame is the server's error.

**LIBERO, mapped as openpi's LIBERO example maps it** (``examples/libero/main.py``):

- ``observation/image`` and ``observation/wrist_image``: the agentview and wrist cameras, uint8, resized with padding
  to ``image_size`` (224) by ``openpi_client.image_tools.resize_with_pad``. The example rotates robosuite's frames by
  180°; ``prebuilt/libero``'s images already are (LeRobot's convention), so they go as they are;
- ``observation/state``: float32 (8,), ``agent_pos`` (end-effector position, its axis-angle, the two finger joints),
  the example's state;
- ``prompt``: the instruction.

The reply's ``actions`` are replayed, one per step, for ``replan_steps`` steps (default 5, the example's) before the
next call; each episode keeps its own queue (rlmesh's per-episode state).

**Outbound rules**, as for agent endpoints (:mod:`evaluations.outbound`): the host is resolved and every address
checked at each connection (the socket opened to a checked address, never to the name), no redirect is followed (a
``3xx`` is the server's answer), no proxy from the environment; a call is cut off at ``timeout_seconds`` (the
receive waits no longer, and the connection is dropped); a broken peer is quoted in at most 120 characters. A
server that dies or times out fails the call, hence the episode (``error``, no verdict); the next call connects
again, after a backoff that doubles up to 30 s.
"""

from __future__ import annotations

import os
import ssl
import threading
import time
from urllib.parse import urlsplit

import numpy as np
import rlmesh

__all__ = ["ALLOW_PRIVATE_ENV", "KEY_ENV", "OpenPIError", "OpenPIPolicy", "libero_request"]

#: Environment variables of the model server the platform sets: the server's key, and whether private addresses
#: (loopback, a lab's network) may be connected to (``RLMESH_AGENT_ALLOW_PRIVATE_TARGETS``).
KEY_ENV = "RLMESH_ENDPOINT_KEY"
ALLOW_PRIVATE_ENV = "RLMESH_AGENT_ALLOW_PRIVATE_TARGETS"
#: Observation keys the instruction may arrive under (else: the observation's one text leaf).
INSTRUCTION_KEYS = ("instruction", "task", "prompt", "language_instruction")
MAX_BACKOFF = 30.0


class OpenPIError(RuntimeError):
    """A call to the openpi server failed (refused address, connection, timeout, a text frame, a malformed reply)."""


def _text(value) -> str | None:
    if isinstance(value, np.ndarray) and value.dtype.kind in "USO" and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, bytes):
        return value.decode()
    return value if isinstance(value, str) else None


def instruction_of(observation: dict) -> str:
    for key in INSTRUCTION_KEYS:
        if key in observation and _text(observation[key]) is not None:
            return _text(observation[key])
    texts = [t for t in (_text(v) for v in observation.values()) if t is not None]
    return texts[0] if texts else ""


def libero_request(observation: dict, image_size: int = 224) -> dict:
    """openpi's LIBERO request for one ``prebuilt/libero`` observation (the module docstring); KeyError naming what
    is missing (``pixels.image``, ``pixels.image2``, ``agent_pos``)."""
    from openpi_client import image_tools

    pixels = observation.get("pixels") or {}
    for key in ("image", "image2"):
        if key not in pixels:
            raise KeyError(f"the observation has no pixels.{key}: make prebuilt/libero with both cameras")
    if "agent_pos" not in observation:
        raise KeyError("the observation has no agent_pos")

    def image(frame) -> np.ndarray:
        frame = np.ascontiguousarray(np.asarray(frame, dtype=np.uint8))
        return image_tools.convert_to_uint8(image_tools.resize_with_pad(frame, image_size, image_size))

    return {"observation/image": image(pixels["image"]), "observation/wrist_image": image(pixels["image2"]),
            "observation/state": np.asarray(observation["agent_pos"], dtype=np.float32).reshape(8),
            "prompt": instruction_of(observation)}


class _Connection:
    """One websocket to the server, opened to a checked address; its metadata."""

    def __init__(self, url: str, key: str, *, allow_private: bool, timeout: float):
        import websockets.sync.client

        from ...outbound import connect as outbound

        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise OpenPIError(f"not a ws:// or wss:// URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        try:
            address = outbound.resolve(parts.hostname, port, allow_private=allow_private)[0]
        except outbound.RefusedTarget as exc:
            raise OpenPIError(str(exc)) from None
        except OSError as exc:
            raise OpenPIError(outbound.connection_error(exc, f"openpi server {parts.hostname}: cannot resolve")) from None
        import socket

        sock = socket.create_connection((address, port), timeout=timeout)
        headers = {"Authorization": f"Api-Key {key}"} if key else None
        tls = {"ssl": ssl.create_default_context(), "server_hostname": parts.hostname} if parts.scheme == "wss" else {}
        try:
            self.ws = websockets.sync.client.connect(url, sock=sock, additional_headers=headers, compression=None,
                                                     max_size=None, open_timeout=timeout, proxy=None, legacy=True, **tls)
        except Exception as exc:
            sock.close()
            raise OpenPIError(_handshake_error(exc)) from None
        self.metadata = self.receive(timeout)

    def receive(self, timeout: float) -> dict:
        from openpi_client import msgpack_numpy

        from ...outbound.connect import excerpt

        try:
            frame = self.ws.recv(timeout=timeout)
        except TimeoutError:
            self.close()
            raise OpenPIError(f"the openpi server did not answer within {timeout:g} s") from None
        except Exception as exc:
            self.close()
            raise OpenPIError(f"the openpi server closed the connection: {type(exc).__name__}") from None
        if isinstance(frame, str):
            raise OpenPIError(f"the openpi server answered with an error: {excerpt(frame, 'it says')}")
        try:
            reply = msgpack_numpy.unpackb(frame)
        except Exception:
            raise OpenPIError(f"the openpi server's reply is not msgpack: {excerpt(frame[:200], 'it starts')}") from None
        if not isinstance(reply, dict):
            raise OpenPIError(f"the openpi server's reply is a {type(reply).__name__}, not a map")
        return reply

    def infer(self, request: dict, timeout: float) -> dict:
        from openpi_client import msgpack_numpy

        try:
            self.ws.send(msgpack_numpy.packb(request))
        except Exception as exc:
            self.close()
            raise OpenPIError(f"sending to the openpi server failed: {type(exc).__name__}") from None
        return self.receive(timeout)

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass


def _handshake_error(exc: Exception) -> str:
    from ...outbound.connect import excerpt

    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if status is not None:
        note = " (redirects are not followed)" if 300 <= status < 400 else ""
        body = getattr(response, "body", b"") or b""
        return f"the openpi server refused the websocket: HTTP {status}{note}; {excerpt(body)}"
    return f"the openpi server's websocket failed to open: {type(exc).__name__}: {excerpt(str(exc), 'it says')}"


class OpenPIPolicy(rlmesh.numpy.Model):
    """An openpi policy server on ``prebuilt/libero`` observations (the module docstring); action float32 (7,).

    ``load(url, replan_steps=5, image_size=224, timeout_seconds=30)``; the key and the private-address allowance come
    from the server's environment (:data:`KEY_ENV`, :data:`ALLOW_PRIVATE_ENV`), set by the platform."""

    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER  # reads prebuilt/libero's observation keys itself

    def load(self, url: str = "", replan_steps: int = 5, image_size: int = 224, timeout_seconds: float = 30.0) -> None:
        self.url, self.replan_steps = url, max(1, int(replan_steps))
        self.image_size, self.timeout = int(image_size), float(timeout_seconds)
        self.key = os.environ.get(KEY_ENV, "")
        self.allow_private = os.environ.get(ALLOW_PRIVATE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
        self.device = None
        self._lock = threading.Lock()
        self._conn: _Connection | None = None
        self._backoff, self._next_try = 0.0, 0.0
        #: The server's metadata (its first frame), once connected.
        self.metadata: dict | None = None

    def _connection(self) -> _Connection:
        if self._conn is not None:
            return self._conn
        if not self.url:
            raise OpenPIError("no policy server: load() was given no url (a model entry's endpoint sets it)")
        wait = self._next_try - time.monotonic()
        if wait > 0:  # reconnecting with backoff: this call fails at once, the next one tries
            raise OpenPIError(f"the openpi server failed the last call; trying again in {wait:.1f} s")
        try:
            self._conn = _Connection(self.url, self.key, allow_private=self.allow_private, timeout=self.timeout)
        except OpenPIError:
            self._failed()
            raise
        self.metadata = self._conn.metadata
        self._backoff = 0.0
        return self._conn

    def _failed(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._backoff = min(MAX_BACKOFF, max(1.0, 2 * self._backoff))
        self._next_try = time.monotonic() + self._backoff

    def chunk(self, observation: dict) -> np.ndarray:
        """One call: the server's ``actions`` (H, 7) for ``observation`` (OpenPIError on any failure)."""
        request = libero_request(observation, self.image_size)
        with self._lock:
            conn = self._connection()
            try:
                reply = conn.infer(request, self.timeout)
            except OpenPIError:
                self._failed()
                raise
        actions = np.asarray(reply.get("actions"), dtype=np.float32) if "actions" in reply else None
        if actions is None or actions.ndim != 2 or actions.shape[0] < 1:
            raise OpenPIError(f"the openpi server's reply has no (H, action_dim) 'actions' (keys: {sorted(reply)})")
        return actions

    def predict(self, observation, context=None):
        """The next action of the episode's queued chunk, or the first of a new chunk (``replan_steps`` of it kept)."""
        episode = context["state"] if context is not None else {}
        queue = episode.setdefault("queue", [])
        if not queue:
            queue.extend(self.chunk(observation)[: self.replan_steps])
        return queue.pop(0)
