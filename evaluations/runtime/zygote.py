"""The worker's side of the LIBERO zygote (:mod:`evaluations.prebuilt.libero.zygote`): LIBERO env servers without
cameras are forked from one process per host that holds the task's built env, instead of a fresh interpreter that
imports LIBERO and builds the scene (measured in ``bench/bench_libero.py``: ready in ~0.3 s instead of 5-10 s for a
task the zygote holds, and each further server adds 0.03-0.04 GB instead of 0.74 GB).

The zygote is started by the first worker process that needs it (under a lock, in its own session, so it outlives
that worker) and is found by its socket path, which names the user, the checkout, the LIBERO interpreter and the
content of the LIBERO modules: a zygote holding older code is never asked. ``RLMESH_LIBERO_FORKSERVER=False`` starts
every LIBERO server fresh, as before issue 26.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import struct
import subprocess
import tempfile
import time
from functools import cache
from pathlib import Path

from django.conf import settings

from ..prebuilt.libero import adopt as libero_adopt, zygote as libero_zygote
from .base import RuntimeBackendError, ServerSpec
from .forkserver import ForkedProcess
from .processes import start_time

__all__ = ["serves", "socket_path", "start"]

_MODULES = Path(libero_zygote.__file__).parent


def serves(spec: ServerSpec, python: str, target: str) -> bool:
    """Whether the server of ``spec`` is forked from the LIBERO zygote: a ``python+libero://`` env server of
    ``Libero`` whose make kwargs it forks (``libero_adopt.forkable``: no cameras, the soft reset), with
    ``RLMESH_LIBERO_FORKSERVER`` on."""
    return (settings.RLMESH_LIBERO_FORKSERVER and spec.kind == "env" and spec.source.startswith("python+libero://")
            and target == libero_adopt.TARGET and python == settings.RLMESH_PYTHON_ENVS.get("libero")
            and libero_adopt.forkable(dict(spec.kwargs)))


@cache
def socket_path(python: str) -> Path:
    """The zygote's socket for ``python``: in ``RLMESH_RUN_DIR`` (the temp dir when that path is too long for a
    unix socket), named by a digest of the user, the checkout, the interpreter and the bytes of every
    ``evaluations/prebuilt/libero/**/*.py`` (its subpackages too, each by its path and bytes) and of the runtime
    modules the zygote's children run (a code change, or a module moved, gets a new zygote)."""
    h = hashlib.sha256(f"{os.getuid()}:{settings.BASE_DIR}:{python}".encode())
    here = Path(__file__).resolve().parent
    modules = [(str(p.relative_to(_MODULES)), p) for p in sorted(_MODULES.rglob("*.py"))]
    for name, path in [*modules, ("runtime/forkchild.py", here / "forkchild.py"), ("runtime/processes.py", here / "processes.py")]:
        h.update(name.encode() + b"\0" + path.read_bytes())
    name = f"libero-zygote-{h.hexdigest()[:16]}.sock"
    run_dir = Path(settings.RLMESH_RUN_DIR)
    return run_dir / name if len(str(run_dir / name)) < 100 else Path(tempfile.gettempdir()) / f"rlmesh-{name}"


def _connect(path: Path, timeout: float) -> socket.socket:
    """Connect to the zygote at ``path``; OSError unless the process listening there runs as this user (the request
    carries the server's environment)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        _, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        if uid != os.getuid():
            raise OSError(f"{path} is served by uid {uid}, not this user")
    except OSError:
        sock.close()
        raise
    return sock


def _start_zygote(python: str, path: Path, env: dict, cwd: str, wait_seconds: float) -> socket.socket:
    """Connect to the zygote, starting it first when none answers (one starter at a time, under a lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Path(settings.RLMESH_RUN_DIR).mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _connect(path, wait_seconds)
        except OSError:
            pass
        log = Path(settings.RLMESH_RUN_DIR) / "libero-zygote.log"
        with open(log, "ab") as out:
            # Its own session: it serves every worker process of the host and outlives the one that started it.
            proc = subprocess.Popen([python, "-m", "evaluations.prebuilt.libero.zygote", str(path)], cwd=cwd,
                                    env={**env, "OPENBLAS_NUM_THREADS": "1"}, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                return _connect(path, wait_seconds)
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise OSError(f"the LIBERO zygote did not start (see {log})") from None
                time.sleep(0.1)


def start(spec: ServerSpec, python: str, args: list[str], *, env: dict, log_path: str, cwd: str) -> ForkedProcess:
    """Fork ``rlmesh.serve <args>`` from the host's LIBERO zygote (started if needed) with ``env`` as its whole
    environment and its output appended to ``log_path``; returns once it is forked (the first server of a task waits
    for the zygote to build the task, up to ``spec.ready_limit`` seconds). Raises OSError when the zygote cannot
    (the caller then starts a fresh interpreter)."""
    path = socket_path(python)
    sock = _start_zygote(python, path, env, cwd, spec.ready_limit)
    me = os.getpid()
    started = start_time(me)
    if started is None:
        raise RuntimeBackendError(f"cannot read /proc/{me}/stat")
    request = {"args": args, "env": env, "log": log_path, "cwd": cwd, "worker": [me, started]}
    with sock, sock.makefile("rw") as stream:
        stream.write(json.dumps(request) + "\n")
        stream.flush()
        line = stream.readline()
    if not line:
        raise OSError("the LIBERO zygote closed the connection")
    reply = json.loads(line)
    if "error" in reply:
        raise OSError(f"the LIBERO zygote could not fork the server: {reply['error']}")
    return ForkedProcess(reply["pid"], int(reply["start"]) if reply.get("start") else None)
