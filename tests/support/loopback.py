"""A raw TCP server on loopback for tests that need a peer misbehaving below HTTP (slow, garbage, a proxy)."""

from __future__ import annotations

import socket
import threading

__all__ = ["LoopbackServer"]


class LoopbackServer:
    """Listens on 127.0.0.1 only, on a free port (``port``, ``url`` = ``http://127.0.0.1:<port>``), and hands every
    connection to ``handle(conn)`` on a thread of its own; ``stop()`` closes the listener."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def stop(self) -> None:
        self.sock.close()
