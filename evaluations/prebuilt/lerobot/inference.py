"""The host's inference process of a LeRobot checkpoint (issue 36): the weights loaded once per host, and every
episode the host runs at once in its batcher.

**Why a process of its own.** rlmesh 0.1.0's model server runs one session's ``predict`` at a time (measured: two
sessions, 16 calls of 200 ms, 3.31 s, none overlapping; tests/prebuilt/lerobot/test_batching.py keeps it), so shards
sharing one rlmesh model server never reach a batcher together. Here each shard runs a thin rlmesh model server
(:class:`~.policy.LeRobotPolicy` with ``inference=``, no torch, no checkpoint), and the thin servers of a host call
this process concurrently, one connection each; a thread per connection hands its requests to the policy, whose
:class:`~.batching.ChunkBatcher` gathers them into fixed-shape forward passes.

**The wire**: :mod:`multiprocessing.connection` on a unix socket (0600) in a directory only the worker's user can
enter (0700), with an HMAC challenge both ways, on each connection's own thread within 10 s, on the key in ``RLMESH_INFERENCE_KEY`` (set by the platform on this process and on its
thin servers; never on disk). A request is ``{"episode": id, "seed": int | None, "step": int, "observation": {…}}`` (the
observation as rlmesh gave it to the thin server: numpy arrays and the instruction); the reply ``{"actions": float32
(n, 7)}``: the next ``n_action_steps`` actions of a new chunk for a batching type (``seed`` and ``step``, the actions
the episode has taken, seed a flow-matching policy's noise; nothing of the episode is kept here), the one next action
for the others (their episode's queues stay here: the latest few episodes per connection, and an evicted one asked
for again is an error), or ``{"error": "…"}`` (the thin server
raises it, so the episode ends in error, no verdict).

Run as ``python -m evaluations.prebuilt.lerobot.inference --address unix:///…/inference.sock --kwargs-json '{…}'``
(the checkpoint's ``load`` kwargs) on ``.venv-lerobot``'s interpreter; it listens once the checkpoint is loaded, so a
connection that opens means ready. Pure Python apart from the policy: no Django.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import threading
import time
import os
import socket
from collections import OrderedDict

import numpy as np

from .remote import KEY_ENV, InferenceClient, address_path, handshake, shared_key

__all__ = ["CONNECTIONS", "IN_FLIGHT", "KEY_ENV", "Connections", "InferenceClient", "listen", "policy_responder", "serve"]

#: Episodes whose queues a connection keeps at once (a thin server runs one at a time; a few for safety). An episode
#: evicted and then asked for again is an error, never a silent restart of its queues.
EPISODES_PER_CONNECTION = 4


class InFlight:
    """The start times of the requests being answered, by thread: how long the oldest has been in the process (a
    wedged forward pass, seen from outside by a ping)."""

    def __init__(self):
        self._started: dict[int, float] = {}
        self._lock = threading.Lock()

    def __enter__(self):
        with self._lock:
            self._started[threading.get_ident()] = time.monotonic()

    def __exit__(self, *exc):
        with self._lock:
            self._started.pop(threading.get_ident(), None)

    def oldest_seconds(self) -> float:
        with self._lock:
            return time.monotonic() - min(self._started.values()) if self._started else 0.0


IN_FLIGHT = InFlight()


class Connections:
    """How many authenticated connections are open (one per thin server, a ping's for a moment): the most rows that
    can be waiting at once, which bounds how long a batcher waits (``ChunkBatcher(peers=)``)."""

    def __init__(self):
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self) -> int:
        return self.count

    def opened(self, delta: int) -> None:
        with self._lock:
            self.count += delta


CONNECTIONS = Connections()


def _answer(policy, request: dict, episodes: OrderedDict, ended: set) -> dict:
    """The reply to one request of a connection whose episodes' states are ``episodes`` (the latest few) and whose
    evicted episodes are ``ended``; a ping is answered with how long the oldest request in flight has taken."""
    if request.get("ping"):
        return {"stalledSeconds": IN_FLIGHT.oldest_seconds()}
    with IN_FLIGHT:
        return _act(policy, request, episodes, ended)


def _act(policy, request: dict, episodes: OrderedDict, ended: set) -> dict:
    if policy.batcher is not None:  # a chunk's actions; the request carries the episode's seed and step (its noise)
        seed = request.get("seed")
        return {"actions": np.stack(policy.chunk_actions(request["observation"], 0 if seed is None else int(seed),
                                                         int(request.get("step") or 0)))}
    episode = request["episode"]
    if episode in ended:
        raise RuntimeError(f"episode {episode} was dropped by its connection's later episodes; its queues are gone")
    if episode not in episodes:
        episodes[episode] = {}
        while len(episodes) > EPISODES_PER_CONNECTION:
            ended.add(episodes.popitem(last=False)[0])
    episodes.move_to_end(episode)
    context = {"state": episodes[episode], "episode_seed": request.get("seed")}
    return {"actions": policy.predict(request["observation"], context)[None, :]}


def _connection(sock: socket.socket, key: bytes, respond, connections: Connections = CONNECTIONS) -> None:
    """Authenticate ``sock``, then answer each of its requests with ``respond(request)`` (this connection's own
    responder) until the peer goes away; a request that raises is answered ``{"error": "Type: message"}``."""
    try:
        conn = handshake(sock, key, server=True)
    except Exception:  # noqa: BLE001 - a readiness probe, a wrong key or a silent peer: refused, the others go on
        return
    connections.opened(1)
    try:
        _exchange(conn, respond)
    finally:
        connections.opened(-1)
        closed = getattr(respond, "closed", None)  # the responder's own end of the connection (prebuilt.fused)
        if closed is not None:
            try:
                closed()
            except Exception:  # noqa: BLE001 - the connection is gone either way
                pass


def _exchange(conn, respond) -> None:
    """Answer ``conn``'s requests until it closes: plain pickle both ways (the wire of
    :meth:`~.remote.InferenceClient._call`), a ping's reply as JSON."""
    with conn:
        while True:
            try:
                request = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError, ValueError, pickle.UnpicklingError):
                return  # the thin server went away, or sent what is not a request
            try:
                reply = respond(request)
            except Exception as exc:  # noqa: BLE001 - the episode's error, told to the thin server
                reply = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            ping = isinstance(request, dict) and request.get("ping")
            try:
                data = json.dumps(reply).encode() if ping else pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # noqa: BLE001 - an action that cannot travel is the episode's error
                data = pickle.dumps({"error": f"the reply cannot be sent: {type(exc).__name__}: {exc}"[:2000]})
            try:
                conn.send_bytes(data)
            except OSError:
                return


def serve(address: str, kwargs: dict) -> None:
    """Load the checkpoint (``LeRobotPolicy.load(**kwargs)``), then answer every connection at ``address`` on a
    thread of its own, forever. Raises what ``load`` raises (the process exits with it, the platform shows it)."""
    from .policy import LeRobotPolicy

    policy = LeRobotPolicy()
    policy.load(**kwargs)
    if policy.batcher is not None:
        policy.batcher.peers = CONNECTIONS  # no pass waits for rows no thin server can send
    print(f"inference process ready at {address} ({policy.type}, batch "
          f"{policy.batcher.size if policy.batcher is not None else 'off: one call at a time'})", flush=True)
    listen(address, lambda: policy_responder(policy))


def policy_responder(policy):
    """One connection's responder (:func:`listen`): its episodes' queues, the latest few, and those it evicted."""
    episodes: OrderedDict = OrderedDict()
    ended: set = set()
    return lambda request: _answer(policy, request, episodes, ended)


def listen(address: str, responder, connections: Connections = CONNECTIONS) -> None:
    """Answer every connection at ``address`` (``unix://…``, made 0600) on a thread of its own, forever:
    ``responder()`` makes each connection's ``respond(request) -> reply`` (a loaded LeRobotPolicy's is
    :func:`policy_responder`; ``evaluations.prebuilt.fused`` has its own), counted in ``connections``. The key is
    :data:`KEY_ENV`'s."""
    key, path = shared_key(), address_path(address)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    while True:  # each connection is authenticated on its own thread, so a silent peer holds up nobody else
        sock, _ = listener.accept()
        threading.Thread(target=_connection, args=(sock, key, responder(), connections), daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", required=True, help="unix:///path/inference.sock")
    parser.add_argument("--kwargs-json", default="{}", help="the checkpoint's load kwargs")
    args = parser.parse_args(argv)
    serve(args.address, json.loads(args.kwargs_json))


if __name__ == "__main__":
    sys.exit(main())
