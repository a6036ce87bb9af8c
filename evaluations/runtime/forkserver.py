"""Fast server starts for the local runtime: servers fork from a helper process that already imported ``rlmesh`` and
the prebuilt catalog, instead of a fresh ``python -m rlmesh.serve`` that spends ~0.5 s importing. Measured here:
ready in ~30 ms instead of 0.5–0.8 s, which was most of submit → first step.

Each worker process has its own forkserver (this module run as a script), started in the background when the process
starts (:func:`warm_up`). The forkserver sets ``PR_SET_PDEATHSIG`` so it dies with its worker process, and every
server it forks sets it too, so it dies with the forkserver: a SIGKILLed worker leaves no server behind. A forked
server behaves like the subprocess it replaces: its own process group, its output in its log file, ``rlmesh.serve``'s
own command line.

Python's ``multiprocessing`` forkserver does the same but cannot be used from Celery's pool processes (billiard marks
them daemonic and its authentication keys do not pickle), hence this small one: one JSON line per request on the
forkserver's stdin (``{"args", "env", "log", "cwd", "nodelay"}``), one line back (``{"pid", "start"}``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .forkchild import become_server, claim_title, die_with_parent
from .processes import start_time

__all__ = ["PRELOAD", "ForkedProcess", "start", "warm_up"]

#: Imported once in the forkserver; every server forked from it starts with them loaded.
PRELOAD = ("numpy", "gymnasium", "rlmesh", "rlmesh.serve", "evaluations.prebuilt.envs", "evaluations.prebuilt.models",
           "evaluations.prebuilt.policies")


# ------------------------------------------------------------------ the forkserver (its own process)
def _serve(request: dict) -> None:  # in the forked child: becomes the server, never returns
    def before_run():
        if request.get("nodelay"):
            from .tcp_nodelay import watch

            watch()  # TCP_NODELAY on the listener rlmesh.serve is about to bind

    become_server(request, with_parent=True, before_run=before_run)


def main() -> None:
    """Forkserver loop: preload, then fork one server per request line until stdin closes (its worker is gone)."""
    import importlib

    claim_title()
    die_with_parent()
    for name in PRELOAD:
        importlib.import_module(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # servers are reaped automatically
    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        out.flush()
        pid = os.fork()
        if pid == 0:
            _serve(request)
        out.write(json.dumps({"pid": pid, "start": start_time(pid)}) + "\n")
        out.flush()


# ------------------------------------------------------------------ the worker's side
class ForkedProcess:
    """A server forked by the forkserver, with the part of ``subprocess.Popen`` the local runtime uses. Not our child:
    it is gone when its pid no longer names the process that was started (the forkserver reaps it)."""

    def __init__(self, pid: int, start: int | None):
        self.pid = pid
        self._start = start
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and (self._start is None or start_time(self.pid) != self._start):
            self.returncode = -1  # exited; its code went to the forkserver
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(["rlmesh.serve"], timeout)
            time.sleep(0.02)
        return self.returncode


class _Forkserver:
    def __init__(self):
        root = str(Path(__file__).resolve().parents[2])  # the checkout: where ``evaluations`` is importable from
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        # One BLAS thread unless the operator chose otherwise: thread pools created before a fork do not survive it.
        env = {"OPENBLAS_NUM_THREADS": "1", **os.environ, "PYTHONPATH": path}
        self.proc = subprocess.Popen([sys.executable, "-m", "evaluations.runtime.forkserver"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, cwd=root, text=True, preexec_fn=os.setpgrp)

    def fork(self, request: dict) -> ForkedProcess:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise OSError(f"the forkserver exited (code {self.proc.poll()})")
        reply = json.loads(line)
        return ForkedProcess(reply["pid"], reply["start"])


_lock = threading.Lock()
_server: _Forkserver | None = None


def _forkserver() -> _Forkserver:
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = _Forkserver()
    return _server


def warm_up() -> None:
    """Start this process's forkserver now (preloading takes ~0.4 s, in that process), so the first shard is fast."""
    with _lock:
        _forkserver()


def start(args: list[str], *, env: dict, log_path: str, cwd: str, nodelay: bool = False) -> ForkedProcess:
    """Fork ``rlmesh.serve <args>`` from this process's forkserver with ``env`` as its whole environment and its output
    appended to ``log_path``; returns at once (readiness is the caller's business). ``nodelay``: set ``TCP_NODELAY`` on
    the server's TCP listener (:func:`~evaluations.runtime.tcp_nodelay.watch`). Raises OSError if the forkserver
    cannot fork (a fresh one is started on the next call)."""
    with _lock:
        return _forkserver().fork({"args": args, "env": env, "log": log_path, "cwd": cwd, "nodelay": nodelay})


if __name__ == "__main__":
    main()
