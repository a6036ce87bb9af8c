"""What a forked server process does between ``fork()`` and serving: one body for every place that forks servers.

Two helpers fork ``rlmesh.serve`` processes instead of starting fresh interpreters: the local runtime's forkserver
(:mod:`evaluations.runtime.forkserver`, in the main venv) and LIBERO's zygote (:mod:`evaluations.prebuilt.libero.zygote`,
in ``.venv-libero``, which has no Django). Both children must come out the same: their own process group, signals
back to their defaults, output appended to the log file the worker named, the worker's environment and working
directory, ``ps`` showing ``python -m rlmesh.serve …``, and an exit code that is the server's. This module holds that
body; it imports neither Django nor a simulator, so both helpers can import it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

__all__ = ["become_server", "claim_title", "die_with_parent"]

_PR_SET_PDEATHSIG = 1


def claim_title() -> None:
    """Let ``setproctitle`` find this process's ``argv`` memory now, at start-up; call it before any import that may
    set an environment variable. setproctitle finds ``argv`` by walking back from ``environ[0]``; once a library has
    set the first environment variable again, ``environ[0]`` points elsewhere and a forked server's title is silently
    left as its parent's (``ps`` showed the zygote, not ``rlmesh.serve``). A no-op without setproctitle."""
    try:
        import setproctitle
    except ImportError:
        return
    setproctitle.getproctitle()  # the lookup runs at the first call, not at import


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> None:
    """Ask Linux to send ``sig`` to this process when its parent exits (``prctl(PR_SET_PDEATHSIG)``); a no-op where
    libc cannot be loaded."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)
    except OSError:
        pass


def become_server(request: dict, *, with_parent: bool, before_run: Callable[[], None] | None = None) -> None:
    """Turn the freshly forked child into ``python -m rlmesh.serve <request["args"]>``; never returns.

    ``request`` holds ``args`` (``rlmesh.serve``'s arguments), ``env`` (the whole environment to serve with), ``log``
    (a file the output is appended to) and ``cwd``. ``with_parent``: die with the forking process (the forkserver is
    its worker's own; a shared zygote is not, so its children watch their worker instead, in ``before_run``).
    ``before_run`` runs last, just before the server, with the environment and output already in place. The process
    exits with the server's exit code (1 if it raised; the traceback goes to the log).
    """
    import runpy

    code = 1
    try:
        try:  # ps/pgrep show the command it replaces, not the process it was forked from
            import setproctitle

            setproctitle.setproctitle(" ".join([sys.executable, "-m", "rlmesh.serve", *request["args"]]))
        except ImportError:
            pass
        os.setpgrp()
        if with_parent:
            die_with_parent()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        fd = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = ["rlmesh.serve", *request["args"]]
        if before_run is not None:
            before_run()
        runpy.run_module("rlmesh.serve", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1  # as Python exits
    except BaseException:  # noqa: BLE001 - the server's own error goes to its log
        import traceback

        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
