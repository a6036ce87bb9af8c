"""The host inference process's wire (prebuilt.lerobot.inference / .remote), with a stand-in policy (no torch): a
silent peer holds up nobody, a wrong key is refused and the process goes on, a thin client gets its episode's
actions, and an episode whose queues were dropped is an error, never a silent restart."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from evaluations.prebuilt.lerobot import inference, remote


class OneCallPolicy:
    """Like a non-batching LeRobotPolicy: one action per call, counted per episode in its state."""

    batcher = None

    def predict(self, observation, context):
        state = context["state"]
        state["calls"] = state.get("calls", 0) + 1
        return np.array([observation["x"], state["calls"], context["episode_seed"] or 0], dtype=np.float32)


class ChunkPolicy:
    """Like a batching LeRobotPolicy: a chunk of two actions per call, ``[x, seed, step]`` each, keeping nothing."""

    batcher = object()

    def chunk_actions(self, observation, seed, step):
        return [np.array([observation["x"], seed, step + i], dtype=np.float32) for i in range(2)]


def _serve(tmp_path, monkeypatch, policy) -> str:
    monkeypatch.setenv(remote.KEY_ENV, "k" * 32)
    monkeypatch.setattr(remote, "HANDSHAKE_TIMEOUT", 5.0)
    address = f"unix://{tmp_path}/inference.sock"
    threading.Thread(target=inference.listen, args=(address, lambda: inference.policy_responder(policy)), daemon=True).start()
    deadline = time.monotonic() + 5
    while not (tmp_path / "inference.sock").exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return address


@pytest.fixture
def served(tmp_path, monkeypatch):
    return _serve(tmp_path, monkeypatch, OneCallPolicy())


def test_a_batching_types_episode_sends_its_seed_and_step_and_the_process_keeps_nothing(tmp_path, monkeypatch):
    """A thin server (LeRobotPolicy with ``inference=``) asks for a chunk when its own runs out, with the episode's
    seed and the actions it has taken, which seed the chunk's noise; the process keeps no state for it, so a
    reconnect mid-episode goes on at the right step and any number of episodes share a connection."""
    from evaluations.prebuilt.lerobot.policy import LeRobotPolicy

    address = _serve(tmp_path, monkeypatch, ChunkPolicy())
    thin = LeRobotPolicy()
    thin.load(inference=address)
    context = {"state": {}, "episode_seed": 3}
    taken = [thin.predict({"x": float(t)}, context).tolist() for t in range(3)]
    thin.remote._drop()  # the link breaks and is made again
    taken += [thin.predict({"x": float(t)}, context).tolist() for t in range(3, 5)]
    # chunks asked at steps 0, 2 and 4, each from the observation of its first step
    assert taken == [[0, 3, 0], [0, 3, 1], [2, 3, 2], [2, 3, 3], [4, 3, 4]]
    for i in range(inference.EPISODES_PER_CONNECTION + 2):  # no per-connection episode limit for these
        assert thin.predict({"x": 0.0}, {"state": {}, "episode_seed": i}).tolist() == [0, i, 0]


def test_a_thin_client_gets_its_episodes_actions_and_a_silent_peer_holds_up_nobody(served):
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(served.removeprefix("unix://"))  # connects, then never answers the challenge
    try:
        client = remote.InferenceClient(served)
        t0 = time.monotonic()
        (first,) = client.actions("ep-a", 7, {"x": 1.5})
        assert time.monotonic() - t0 < 4.0  # not behind the silent peer's handshake (5 s)
        assert first.tolist() == [1.5, 1.0, 7.0]
        assert client.actions("ep-a", 7, {"x": 2.0})[0].tolist() == [2.0, 2.0, 7.0]  # its own queue goes on
        assert client.actions("ep-b", 8, {"x": 0.0})[0].tolist() == [0.0, 1.0, 8.0]  # a new episode starts afresh
    finally:
        silent.close()


def test_a_wrong_key_is_refused_and_the_process_goes_on(served, monkeypatch):
    monkeypatch.setenv(remote.KEY_ENV, "wrong")
    # Refused in the HMAC challenge (or, on a loaded host, the process has closed the link before the client reads
    # the refusal): either way no request goes through.
    with pytest.raises(RuntimeError, match="unreachable: (AuthenticationError|EOFError|ConnectionResetError)"):
        remote.InferenceClient(served).actions("ep", 0, {"x": 0.0})
    monkeypatch.setenv(remote.KEY_ENV, "k" * 32)
    assert remote.InferenceClient(served).actions("ep", 0, {"x": 3.0})[0][0] == 3.0


def test_an_episode_whose_queues_were_dropped_is_an_error_not_a_restart(served):
    client = remote.InferenceClient(served)
    client.actions("old", 0, {"x": 0.0})
    for i in range(inference.EPISODES_PER_CONNECTION):
        client.actions(f"new-{i}", 0, {"x": 0.0})
    with pytest.raises(RuntimeError, match="dropped by its connection's later episodes"):
        client.actions("old", 0, {"x": 0.0})
    assert client.actions("new-3", 0, {"x": 0.0})[0][1] == 2.0  # the kept ones go on


def test_a_process_that_is_not_there_fails_the_call_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv(remote.KEY_ENV, "k")
    with pytest.raises(RuntimeError, match="unreachable"):
        remote.InferenceClient(f"unix://{tmp_path}/none.sock").actions("ep", 0, {"x": 0.0})
    with pytest.raises(ValueError, match="unix://"):
        remote.address_path("127.0.0.1:5")


def test_a_ping_says_how_long_the_oldest_request_has_been_in_the_process(tmp_path, monkeypatch):
    """A wedged forward pass is seen from outside: a ping on a connection of its own is answered at once, with the
    seconds the request in flight has taken (0 when idle)."""
    monkeypatch.setenv(remote.KEY_ENV, "k" * 32)
    release = threading.Event()

    class Wedged(OneCallPolicy):
        def predict(self, observation, context):
            release.wait(10)
            return super().predict(observation, context)

    address = f"unix://{tmp_path}/inference.sock"
    threading.Thread(target=inference.listen, args=(address, lambda: inference.policy_responder(Wedged())), daemon=True).start()
    while not (tmp_path / "inference.sock").exists():
        time.sleep(0.01)
    assert remote.InferenceClient(address).ping() == 0.0
    stuck = threading.Thread(target=remote.InferenceClient(address).actions, args=("ep", 0, {"x": 0.0}), daemon=True)
    stuck.start()
    time.sleep(0.5)
    try:
        assert 0.4 < remote.InferenceClient(address).ping(timeout=2.0) < 5.0
    finally:
        release.set()
        stuck.join(5)
    assert remote.InferenceClient(address).ping() == 0.0
