"""Real processes for the agent tests: rlmesh env and model servers (``python -m rlmesh.serve``) and the reference
agent (``manage.py serve_reference_agent``), on free loopback ports, stopped at teardown."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The key the bridge processes get; every test greps what came back for it.
SECRET = "sk-test-" + os.urandom(8).hex() + "-do-not-leak"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "RLMESH_WORKFLOW_EDITION": "2026.06", "PYTHONPATH": str(ROOT),
           "MINIWOB_CHROME_BINARY": os.environ.get("MINIWOB_CHROME_BINARY", "/usr/bin/chromium"),
           "MINIWOB_CHROMEDRIVER": os.environ.get("MINIWOB_CHROMEDRIVER", "/usr/bin/chromedriver")}
    env.pop(("RLMESH_ENDPOINT_KEY"), None)
    # The endpoints these tests serve are on loopback: allowed as the platform allows them (model_secrets).
    env["RLMESH_AGENT_ALLOW_PRIVATE_TARGETS"] = "true"
    env.update(extra)
    return env


class Proc:
    """A child process whose output goes to a log file (shown when it dies early)."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str]):
        self.log = log
        self._fh = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self._fh, stderr=subprocess.STDOUT)

    def wait_port(self, port: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise RuntimeError(f"process exited early ({self.popen.returncode}):\n{self.log.read_text()[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"nothing listens on {port} after {timeout}s:\n{self.log.read_text()[-3000:]}")

    def wait_line(self, pattern: str, timeout: float = 60.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.log.read_text())
            if match:
                return match
            if self.popen.poll() is not None:
                raise RuntimeError(f"process exited early:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"no line matching {pattern!r}:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._fh.close()


@pytest.fixture
def procs(tmp_path):
    """Start processes with ``procs(args, name, **env)``; all are stopped at teardown, and no log line of any of
    them may hold the endpoint key."""
    started: list[Proc] = []

    def start(args: list[str], name: str, **env: str) -> Proc:
        proc = Proc(args, tmp_path / f"{name}.log", child_env(**env))
        started.append(proc)
        return proc

    yield start
    for proc in reversed(started):
        proc.stop()
    for proc in started:
        assert SECRET not in proc.log.read_text(), f"the endpoint key leaked into {proc.log.name}"


def serve_env(procs, task: str, **params) -> str:
    """A MiniWoB env server for ``task``; returns its address."""
    port = free_port()
    proc = procs([sys.executable, "-m", "rlmesh.serve", "--env", "evaluations.prebuilt.miniwob:MiniWoB",
                  "--address", f"127.0.0.1:{port}", "--kwargs-json", json.dumps({"task": task, **params})],
                 f"env-{task}-{port}")
    proc.wait_port(port)
    return f"127.0.0.1:{port}"


def serve_bridge(procs, config: dict, key: str = SECRET) -> str:
    """An endpoint bridge model server with ``config`` and the key in its environment; returns its address."""
    port = free_port()
    proc = procs([sys.executable, "-m", "rlmesh.serve", "evaluations.agents.bridge:EndpointBridge",
                  "--address", f"127.0.0.1:{port}", "--kwargs-json", json.dumps(config)],
                 f"bridge-{port}", RLMESH_ENDPOINT_KEY=key)
    proc.wait_port(port)
    return f"127.0.0.1:{port}"


@pytest.fixture
def reference_agent(procs) -> str:
    """The reference agent served by ``manage.py serve_reference_agent --port 0``; returns its base URL."""
    proc = procs([sys.executable, "manage.py", "serve_reference_agent", "--port", "0"], "reference-agent")
    return proc.wait_line(r"listening on (http://\S+)")[1]


@pytest.fixture(scope="session")
def chromium() -> None:
    """Fail (never skip) when Chromium or its driver is missing: CI installs both."""
    from evaluations.prebuilt.miniwob.env import BrowserMissing, chromium_paths

    try:
        chromium_paths()
    except BrowserMissing as exc:
        pytest.fail(f"MiniWoB tests need Chromium: {exc}")
