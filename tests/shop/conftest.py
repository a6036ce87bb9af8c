"""The shop tests share the agent tests' fixtures (Chromium check, real processes, the reference agent), plus
scripted JSON endpoints served from a thread of the test process (agents that always finish or always wait, a
judge)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import pytest

from ..agents.conftest import chromium, procs, reference_agent  # noqa: F401 - fixtures


@pytest.fixture
def serve_json():
    """``serve_json(reply)`` serves ``reply(path, body) -> dict`` on a free loopback port and returns its base URL;
    every request is kept in ``.calls`` of the returned server (``serve_json.servers[-1]``)."""
    servers: list[ThreadingHTTPServer] = []

    def start(reply: Callable[[str, dict], dict]) -> str:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server.calls.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                data = json.dumps(reply(self.path, body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.calls = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    start.servers = servers
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
