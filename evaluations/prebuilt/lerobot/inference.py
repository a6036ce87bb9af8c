"""The host's inference process of a LeRobot checkpoint (issue 36): the weights loaded once per host, and every
episode the host runs at once in its batcher.

**Why a process of its own.** rlmesh 0.1.0's model server runs one session's ``predict`` at a time (measured: two
sessions, 16 calls of 200 ms, 3.31 s, none overlapping; tests/prebuilt/lerobot/test_batching.py keeps it), so shards
sharing one rlmesh model server never reach a batcher together. Here each shard runs a thin rlmesh model server
(:class:`~.policy.LeRobotPolicy` with ``inference=``, no torch, no checkpoint), and the thin servers of a host call
this process concurrently, one connection each; a thread per connection hands its requests to the policy, whose
:class:`~.batching.ChunkBatcher` gathers them into fixed-shape forward passes.

**The wire**: :mod:`multiprocessing.connection` on a unix socket in a directory only the worker's user can enter
(0700), with an HMAC challenge on the key in ``RLMESH_INFERENCE_KEY`` (set by the platform on this process and on its
thin servers; never on disk). A request is ``{"episode": id, "seed": int | None, "observation": {…}}`` (the
observation as rlmesh gave it to the thin server: numpy arrays and the instruction); the reply ``{"actions": float32
(n, 7)}``: the next ``n_action_steps`` actions of a new chunk for a batching type, the one next action for the others
(their episode's queues stay here, one episode per connection at a time), or ``{"error": "…"}`` (the thin server
raises it, so the episode ends in error, no verdict).

Run as ``python -m evaluations.prebuilt.lerobot.inference --address unix:///…/inference.sock --kwargs-json '{…}'``
(the checkpoint's ``load`` kwargs) on ``.venv-lerobot``'s interpreter; it listens once the checkpoint is loaded, so a
connection that opens means ready. Pure Python apart from the policy: no Django.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Listener

import numpy as np

__all__ = ["KEY_ENV", "InferenceClient", "serve"]

#: The environment variable holding the shared key of a host's inference process and its thin servers.
KEY_ENV = "RLMESH_INFERENCE_KEY"
#: Seconds a thin server waits for its actions before the call fails (a forward pass of a VLA on a loaded CPU host
#: takes seconds; an hour-long wait is a hung process, and the episode ends in error rather than hang with it).
REPLY_TIMEOUT = 600.0


def _path(address: str) -> str:
    if not address.startswith("unix://"):
        raise ValueError(f"the inference process listens on a unix:// address, not {address!r}")
    return address.removeprefix("unix://")


def _key() -> bytes:
    key = os.environ.get(KEY_ENV, "")
    if not key:
        raise RuntimeError(f"{KEY_ENV} is not set: the platform starts the inference process and its thin servers")
    return key.encode()


class InferenceClient:
    """A thin server's connection to the host's inference process at ``address`` (``unix://…``); opened on first
    use, again after a failure. :meth:`actions` raises RuntimeError with the process's error or the broken link."""

    def __init__(self, address: str):
        self.path, self.key = _path(address), _key()
        self._conn = None
        self._lock = threading.Lock()

    def actions(self, episode: str, seed, observation: dict) -> list[np.ndarray]:
        """The episode's next actions (the module docstring): a list of float32 (7,) arrays, at least one."""
        request = {"episode": episode, "seed": None if seed is None else int(seed), "observation": observation}
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = Client(self.path, family="AF_UNIX", authkey=self.key)
                self._conn.send(request)
                if not self._conn.poll(REPLY_TIMEOUT):
                    raise TimeoutError(f"no answer within {REPLY_TIMEOUT:g} s")
                reply = self._conn.recv()
            except (OSError, EOFError, TimeoutError, AuthenticationError) as exc:
                self._drop()
                raise RuntimeError(f"the host's inference process is unreachable: {type(exc).__name__}: {exc}") from None
        if "error" in reply:
            raise RuntimeError(f"the host's inference process failed: {reply['error']}")
        actions = np.asarray(reply["actions"], dtype=np.float32)
        return list(actions)

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
        self._conn = None


def _answer(policy, request: dict, episodes: dict) -> dict:
    """The reply to one request of a connection whose episodes' states are ``episodes`` (one kept at a time)."""
    if policy.batcher is not None:
        return {"actions": np.stack(policy.chunk_actions(request["observation"]))}
    episode = request["episode"]
    if episode not in episodes:
        episodes.clear()  # a thin server runs one episode at a time: a new one ends the last one's queues
        episodes[episode] = {}
    context = {"state": episodes[episode], "episode_seed": request.get("seed")}
    return {"actions": policy.predict(request["observation"], context)[None, :]}


def _connection(policy, conn) -> None:
    episodes: dict = {}
    with conn:
        while True:
            try:
                request = conn.recv()
            except (EOFError, OSError):
                return  # the thin server went away
            try:
                reply = _answer(policy, request, episodes)
            except Exception as exc:  # noqa: BLE001 - the episode's error, told to the thin server
                reply = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            try:
                conn.send(reply)
            except OSError:
                return


def serve(address: str, kwargs: dict) -> None:
    """Load the checkpoint (``LeRobotPolicy.load(**kwargs)``), then answer every connection at ``address`` on a
    thread of its own, forever. Raises what ``load`` raises (the process exits with it, the platform shows it)."""
    from .policy import LeRobotPolicy

    policy = LeRobotPolicy()
    policy.load(**kwargs)
    listener = Listener(_path(address), family="AF_UNIX", authkey=_key())
    print(f"inference process ready at {address} ({policy.type}, batch "
          f"{policy.batcher.size if policy.batcher is not None else 'off: one call at a time'})", flush=True)
    while True:
        try:
            conn = listener.accept()
        except Exception:  # noqa: BLE001 - a readiness probe or a wrong key: that caller is refused, others go on
            continue
        threading.Thread(target=_connection, args=(policy, conn), daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", required=True, help="unix:///path/inference.sock")
    parser.add_argument("--kwargs-json", default="{}", help="the checkpoint's load kwargs")
    args = parser.parse_args(argv)
    serve(args.address, json.loads(args.kwargs_json))


if __name__ == "__main__":
    sys.exit(main())
