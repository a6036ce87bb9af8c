"""A real openpi policy server for tests: a websocket server (``websockets``) speaking openpi's protocol with
``openpi-client``'s own msgpack-numpy, as ``serve_policy.py`` does: its metadata first, then one reply per request.
It replays recorded actions (an expert episode's), so an episode's outcome is known, and keeps what it received for
the wire checks."""

from __future__ import annotations

import threading

import numpy as np
from openpi_client import msgpack_numpy
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import serve

__all__ = ["ReplayServer"]


class ReplayServer:
    """Serves ``actions`` (steps × 7) in chunks of ``horizon``. With ``states`` (the recorded episode's states, one per
    observation: its ``obs/agent_pos``), a request gets the rows from the step whose state its
    ``observation/state`` equals, bit for bit: a policy of the observation, like a real one (the platform's
    first-action check may call it on first observations before the episode). Without, the k-th request of a
    connection gets the rows from ``k × advance`` on (``advance``: the client's replan steps). ``key``: the
    ``Api-Key`` every connection must present (else the handshake is refused, 401)."""

    def __init__(self, actions: np.ndarray, *, advance: int = 1, horizon: int = 10, key: str = "",
                 metadata: dict | None = None, states: np.ndarray | None = None):
        self.actions = np.asarray(actions, dtype=np.float32)
        self.states = None if states is None else np.asarray(states, dtype=np.float32)
        self.advance, self.horizon, self.key = advance, horizon, key
        self.metadata = metadata or {"policy": "replay", "action_horizon": horizon}
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.connections = 0
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None, max_size=None,
                             process_request=self._check_key)
        self.port = self._server.socket.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _check_key(self, connection, request):
        self.headers.append({k.title(): v for k, v in request.headers.raw_items()})
        if self.key and request.headers.get("Authorization") != f"Api-Key {self.key}":
            return connection.respond(401, "bad key\n")
        return None

    def _handle(self, ws) -> None:
        self.connections += 1
        try:
            self._serve(ws)
        except ConnectionClosed:  # the bridge's process ends with its shard, without a closing handshake
            pass

    def _serve(self, ws) -> None:
        ws.send(msgpack_numpy.packb(self.metadata))
        step = 0
        for frame in ws:
            request = msgpack_numpy.unpackb(frame)
            self.requests.append({k: (v.shape, str(v.dtype)) if isinstance(v, np.ndarray) else v
                                  for k, v in request.items()})
            if self.states is not None:
                state = np.asarray(request["observation/state"], dtype=np.float32)
                hits = np.flatnonzero(np.all(self.states == state, axis=1))
                step = int(hits[0]) if len(hits) else len(self.actions)
            chunk = self.actions[step: step + self.horizon]
            if len(chunk) < self.horizon:  # past the recording: hold still, gripper as it was
                pad = np.repeat(self.actions[-1:] * np.array([0, 0, 0, 0, 0, 0, 1], np.float32),
                                self.horizon - len(chunk), axis=0)
                chunk = np.concatenate([chunk, pad]) if len(chunk) else pad
            ws.send(msgpack_numpy.packb({"actions": chunk, "server_timing": {"infer_ms": 0.1}}))
            step += self.advance

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)
