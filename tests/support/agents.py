"""Processes and receivers the agent end-to-end tests and benchmarks need: the reference agent served by
``manage.py serve_reference_agent`` and a loopback webhook receiver that records what it got."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ReferenceAgent", "WebhookReceiver", "agent_env"]


def agent_env(**extra: str) -> dict[str, str]:
    """Settings for a platform that runs agents on this machine: loopback targets allowed (the reference agent and
    the receiver live there), short retries, Debian's Chromium for MiniWoB."""
    return {"RLMESH_AGENT_ALLOW_PRIVATE_TARGETS": "true", "RLMESH_WEBHOOK_BACKOFF_SECONDS": "1",
            "RLMESH_AGENT_CALL_RETRIES": "1", "RLMESH_AGENT_CALL_BACKOFF": "0.1", "RLMESH_AGENT_CALL_TIMEOUT": "20",
            "MINIWOB_CHROME_BINARY": os.environ.get("MINIWOB_CHROME_BINARY", "/usr/bin/chromium"),
            "MINIWOB_CHROMEDRIVER": os.environ.get("MINIWOB_CHROMEDRIVER", "/usr/bin/chromedriver"), **extra}


class ReferenceAgent:
    """``manage.py serve_reference_agent --port 0`` in its own process group; ``url`` once it listens."""

    def __init__(self, log: Path, env: dict | None = None):
        self.log = log
        self._fh = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "manage.py", "serve_reference_agent", "--port", "0"], cwd=ROOT,
                                     env={**os.environ, **(env or {})}, stdout=self._fh, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while not (match := re.search(r"listening on (http://\S+)", log.read_text())):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("reference agent did not start:\n" + log.read_text()[-2000:])
            time.sleep(0.1)
        self.url = match[1]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self._fh.close()


class WebhookReceiver:
    """A loopback HTTP server answering POSTs with ``answers`` in turn (then 200), keeping ``(headers, body)``."""

    def __init__(self, answers: list[int]):
        self.answers, self.received = list(answers), []
        self.event = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.received.append((dict(self.headers), body))
                self.send_response(outer.answers.pop(0) if outer.answers else 200)
                self.end_headers()
                outer.event.set()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/rlmesh"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_agent_shards_inline(monkeypatch, settings) -> None:
    """Settings for running agent shards inside a test: no heartbeat thread, loopback endpoints allowed, one quick
    retry and a short timeout for endpoint calls."""
    from evaluations.runs import loop as execution

    monkeypatch.setattr(execution, "HEARTBEAT_SECONDS", 3600)
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    settings.RLMESH_AGENT_CALL_RETRIES = 1
    settings.RLMESH_AGENT_CALL_BACKOFF = 0.05
    settings.RLMESH_AGENT_CALL_TIMEOUT = 5
