"""A logging HTTP proxy on loopback for tests that check nothing is sent through a proxy: it records the first line
of every request it gets (``GET http://…``, ``CONNECT host:443``) and answers each with ``502``."""

from __future__ import annotations

import socket
import threading

from .loopback import LoopbackServer

__all__ = ["LoggingProxy"]

#: The environment variables HTTP clients (urllib3, requests, httpx, Chromium, chromedriver) read a proxy from.
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class LoggingProxy(LoopbackServer):
    """Listens on 127.0.0.1 only; ``requests`` lists the request lines seen, ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self):
        self.requests: list[str] = []
        self._lock = threading.Lock()
        super().__init__()

    def environment(self, no_proxy: str | None = None) -> dict[str, str]:
        """Every proxy variable pointing here (and ``NO_PROXY``/``no_proxy`` when given)."""
        env = dict.fromkeys(PROXY_VARIABLES, self.url)
        if no_proxy is not None:
            env.update(NO_PROXY=no_proxy, no_proxy=no_proxy)
        return env

    def handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            data = b""
            try:
                while b"\n" not in data and len(data) < 8192:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                line = data.split(b"\r\n", 1)[0].decode("latin-1")
                with self._lock:
                    self.requests.append(line or "(connection without a request)")
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
