"""The model leg's transport: local servers on TCP listen with ``TCP_NODELAY`` (rlmesh 0.1.0 does not set it, and an
image observation then stalls ~40 ms per predict: docs/working/image-transport.md)."""

from __future__ import annotations

import ctypes
import os
import socket
import time

import pytest

from evaluations.runtime import ServerSpec, tcp_nodelay
from evaluations.runtime.local import LocalRuntime

MODEL = "python://evaluations.prebuilt.models:ClassicControlHeuristics"
_SYS_PIDFD_GETFD = 438  # x86_64 and the generic table (aarch64) alike


def nodelay(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def accepted(listener: socket.socket) -> tuple[socket.socket, socket.socket]:
    client = socket.create_connection(listener.getsockname())
    server_side, _ = listener.accept()
    return client, server_side


@pytest.fixture
def listener():
    """A TCP listener bound by someone else (rlmesh's native server, here a plain socket), without TCP_NODELAY."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock
    sock.close()


def test_connections_accepted_after_the_listener_was_set_inherit_nodelay(listener):
    client, before = accepted(listener)
    assert nodelay(before) == 0  # what rlmesh leaves
    listeners, connections = tcp_nodelay.set_on_process_sockets()
    assert listeners >= 1 and connections >= 2  # this test's listener, and both ends of the connection made before
    assert nodelay(before) == 1
    client2, after = accepted(listener)
    assert nodelay(after) == 1  # inherited from the listener (Linux)
    for sock in (client, before, client2, after):
        sock.close()


def test_the_watcher_sets_a_listener_bound_after_it_started(monkeypatch):
    monkeypatch.setattr(tcp_nodelay, "RESCAN_DELAYS", (0.01,))
    lines: list[str] = []
    thread = tcp_nodelay.watch(timeout=10, poll=0.001, announce=lines.append)
    with socket.socket() as late:
        late.bind(("127.0.0.1", 0))
        late.listen()
        thread.join(10)
        assert not thread.is_alive()
        client, server_side = accepted(late)
        with client, server_side:
            assert nodelay(server_side) == 1
    assert lines and "TCP_NODELAY set on" in lines[0]


@pytest.mark.parametrize("address,tcp", [("127.0.0.1:5000", True), ("tcp://0.0.0.0:50051", True), ("5000", True),
                                         ("unix:///tmp/x/env.sock", False), (None, False)])
def test_only_tcp_addresses_are_watched(address, tcp):
    assert tcp_nodelay.is_tcp(address) is tcp


def test_the_address_is_read_from_the_serve_arguments(monkeypatch):
    monkeypatch.setenv("RLMESH_ADDRESS", "unix:///run/rlmesh/env.sock")
    assert tcp_nodelay._address(["--env", "m:C", "--address", "127.0.0.1:7"]) == "127.0.0.1:7"
    assert tcp_nodelay._address(["m:C", "--address=127.0.0.1:8"]) == "127.0.0.1:8"
    assert tcp_nodelay._address(["m:C"]) == "unix:///run/rlmesh/env.sock"  # rlmesh.serve's own default source


def _listener_nodelay(pid: int) -> int:
    """TCP_NODELAY of the TCP listening socket of process ``pid``, read through a duplicate of its descriptor
    (``pidfd_getfd``); skips when this host does not allow it."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                    continue
            except OSError:
                continue
            fd = libc.syscall(_SYS_PIDFD_GETFD, pidfd, int(name), 0)
            if fd < 0:
                pytest.skip(f"pidfd_getfd not permitted here: {os.strerror(ctypes.get_errno())}")
            with socket.socket(fileno=fd) as sock:
                if sock.family == socket.AF_INET and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                    return nodelay(sock)
    finally:
        os.close(pidfd)
    raise AssertionError(f"process {pid} has no TCP listener")


@pytest.mark.parametrize("forkserver", [True, False], ids=["forkserver", "fresh-interpreter"])
@pytest.mark.parametrize("enabled", [True, False], ids=["nodelay", "setting-off"])
def test_a_local_model_server_listens_with_tcp_nodelay(settings, forkserver, enabled):
    settings.RLMESH_LOCAL_FORKSERVER = forkserver
    settings.RLMESH_TCP_NODELAY = enabled
    server = LocalRuntime().start(ServerSpec("model", MODEL), name="nodelay-model")
    try:
        assert server.address.startswith("127.0.0.1:")
        pid = server.proc.pid
        # The watcher polls every 2 ms from the server's start; readiness (port open) may come first by a hair.
        deadline = time.monotonic() + 5
        while enabled and _listener_nodelay(pid) != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _listener_nodelay(pid) == (1 if enabled else 0)
        assert ("TCP_NODELAY set on 1 listening socket" in server.log_tail()) is enabled
        # ps and ``pgrep -f rlmesh.serve`` (operators, tests/support/live.py) still find it, launcher or not.
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            assert b"rlmesh.serve" in cmdline.read()
    finally:
        server.stop()


def test_a_local_env_server_stays_on_its_unix_socket_without_the_watcher(settings):
    server = LocalRuntime().start(ServerSpec("env", "python://evaluations.prebuilt.envs:ClassicControl",
                                             {"env_id": "CartPole-v1"}), name="nodelay-env")
    try:
        assert server.address.startswith("unix://")
        assert "TCP_NODELAY" not in server.log_tail()
    finally:
        server.stop()
