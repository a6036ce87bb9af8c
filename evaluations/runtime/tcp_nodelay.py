"""``TCP_NODELAY`` for rlmesh servers on TCP: without it, an image observation stalls ~40 ms per step on loopback.

Why (docs/working/image-transport.md): rlmesh 0.1.0's native gRPC server never sets ``TCP_NODELAY`` on the sockets it
accepts, and it answers a large request with two writes: an HTTP/2 ``WINDOW_UPDATE`` (26 bytes) as soon as it has read
the request, then the response (~260 bytes). Nagle's algorithm holds the second small write until the first is
acknowledged, and the client delays that ACK by Linux's 40 ms minimum. rlmesh exposes no setting for it (no socket
option in ``ServeOptions``, no listener hand-over), and the model client refuses unix sockets, so the platform sets the
option itself, from inside the server process: on Linux an accepted TCP socket inherits ``TCP_NODELAY`` from its
listening socket, so setting it on rlmesh's listener (found among the process's file descriptors once bound) fixes
every connection accepted after that; the few accepted before it (a readiness probe) get it set directly.

Standard library only, so it runs in any venv's interpreter (``python+<venv>://`` sources): the local runtime starts
servers as ``python <this file> -m rlmesh.serve <arguments>`` (the command line still names ``rlmesh.serve``, for
``ps`` and ``pgrep -f``), and the forkserver calls :func:`watch` before it runs
``rlmesh.serve`` in the forked child.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

__all__ = ["is_tcp", "set_on_process_sockets", "watch"]

#: After the listener is found, the process's TCP sockets are set again at these delays (seconds): a connection that
#: completed its handshake before the listener had the option did not inherit it.
RESCAN_DELAYS = (0.05, 0.25, 1.0, 3.0)


def _tcp_sockets():
    """``(fd, socket)`` for every TCP socket this process holds; each socket is a dup, to be closed by the caller."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return
    for fd in fds:
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
            yield fd, sock
        else:
            sock.close()


def set_on_process_sockets() -> tuple[int, int]:
    """Set ``TCP_NODELAY`` on every TCP socket of this process; return ``(listeners, connections)`` it set it on."""
    listeners = connections = 0
    for _fd, sock in _tcp_sockets():
        with sock:
            try:
                listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                continue
            if listening:
                listeners += 1
            else:
                connections += 1
    return listeners, connections


def _run(timeout: float, poll: float, announce) -> None:
    started = time.monotonic()
    while time.monotonic() < started + timeout:
        listeners, _ = set_on_process_sockets()
        if listeners:
            announce(f"rlmesh-platform: TCP_NODELAY set on {listeners} listening socket(s)")
            for delay in RESCAN_DELAYS:
                time.sleep(delay)
                set_on_process_sockets()
            return
        # Fast while a server usually binds (its first seconds), then 10× slower while a big model loads.
        time.sleep(poll if time.monotonic() - started < 5 else poll * 10)


def watch(*, timeout: float = 600.0, poll: float = 0.002, announce=None) -> threading.Thread:
    """Start a daemon thread that waits (up to ``timeout`` s, checking every ``poll`` s) for this process to listen on
    TCP, sets ``TCP_NODELAY`` on the listener and on connections already accepted, and again at ``RESCAN_DELAYS``.
    ``announce`` (default: a line on stderr, i.e. the server's log) is called once with what it did. Returns the
    thread. A server on a unix socket never listens on TCP: the thread only polls until ``timeout``."""
    if announce is None:
        announce = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    thread = threading.Thread(target=_run, args=(timeout, poll, announce), name="tcp-nodelay", daemon=True)
    thread.start()
    return thread


def is_tcp(address: str | None) -> bool:
    """Whether an rlmesh bind address is TCP (``host:port``, ``tcp://…``, a bare port), not ``unix://…``."""
    return address is not None and not address.startswith("unix://")


def _address(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg == "--address" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--address="):
            return arg.split("=", 1)[1]
    return os.environ.get("RLMESH_ADDRESS", "0.0.0.0:50051")


def main(argv: list[str]) -> None:
    """``python tcp_nodelay.py -m rlmesh.serve <arguments>``: :func:`watch` (when ``--address`` is TCP), then run
    ``rlmesh.serve`` in this process."""
    import runpy

    if argv[:2] != ["-m", "rlmesh.serve"]:
        raise SystemExit("usage: python tcp_nodelay.py -m rlmesh.serve <rlmesh.serve arguments>")
    argv = argv[2:]
    sys.path.pop(0)  # this file's directory: the server imports the platform by package, never this folder's modules
    sys.argv = ["rlmesh.serve", *argv]
    if is_tcp(_address(argv)):
        watch()
    runpy.run_module("rlmesh.serve", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
