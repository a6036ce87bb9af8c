"""LIBERO env servers forked from a process that already holds the task's built env (issue 26). Runs in the LIBERO
venv; imports neither Django nor LIBERO at module level.

One zygote per host (per checkout, user and version of these files: the socket path names them,
``evaluations.runtime.zygote``) listens on a unix socket. A request names an env server's ``rlmesh.serve`` arguments;
the zygote builds the task's env once (a *template*: :class:`~evaluations.prebuilt.libero.env.LiberoTaskEnv`, its
scene compiled, its build memory given back, no render context), then forks. The child becomes the server
(``rlmesh.serve`` in its own process group, its output in its log file) and its ``Libero.make`` adopts the template
(``libero_adopt.adopt``) instead of building: ready in well under a second, and every page of the template it does
not write (the compiled model, the imports, the Python objects: ``gc.freeze`` keeps the collector from touching
them) stays shared with the zygote and the task's other servers (copy on write).

The episodes are the same: a reset seeds NumPy's RNG and restores the compiled scene (``libero_reset.soft_reset``)
before it places anything, so what the template did before the fork does not reach them
(``tests/test_libero_memory.py`` compares the trajectory digests of a forked and a freshly built env).

Only envs that observe no camera are forked (``cameras: none``, what the planner asks for a model that reads no
images): a render context (a GL context and its threads) does not survive a fork, and an env with cameras needs one
from its first observation. A forked env that renders (a recorded episode) opens its own, as any env without
cameras does. The zygote keeps the ``RLMESH_LIBERO_TEMPLATES`` most recently used templates (default 2) and exits
after ``RLMESH_LIBERO_ZYGOTE_IDLE_SECONDS`` (default 300) without a request; its servers do not depend on it. A
server exits when the worker process that asked for it is gone (as ``PR_SET_PDEATHSIG`` ties a fresh server to it).

Protocol: one JSON line per connection, ``{"args", "env", "log", "cwd", "worker": [pid, start]}``; one line back,
``{"pid", "start"}`` or ``{"error"}``.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import sys
import threading
import time
from collections import OrderedDict

from ...runtime.forkchild import become_server, claim_title
from ...runtime.processes import start_time
from .adopt import TARGET, template_key

__all__ = ["main"]

# ------------------------------------------------------------------ the zygote
class _Templates:
    def __init__(self, keep: int):
        self.keep = max(1, keep)
        self.envs: OrderedDict[tuple, object] = OrderedDict()

    def get(self, key: tuple, kwargs: dict):
        if key in self.envs:
            self.envs.move_to_end(key)
            return self.envs[key]
        from .factory import Libero

        gc.unfreeze()
        while len(self.envs) >= self.keep:
            _, old = self.envs.popitem(last=False)
            old.close()
        env = self.envs[key] = Libero().make(**kwargs)
        gc.collect()
        gc.freeze()  # the children's collector leaves these objects (and their pages) alone
        from .memory import release_build_memory

        release_build_memory()
        return env


def _kwargs(args: list[str]) -> dict:
    return json.loads(args[args.index("--kwargs-json") + 1]) if "--kwargs-json" in args else {}


def _watch(pid: int, start: int | str | None) -> None:
    """Exit (the whole process group) once the process ``pid`` started at ``start`` (clock ticks since boot, as
    :func:`~evaluations.runtime.processes.start_time`; a decimal string is read as its number) is gone."""
    start = None if start is None else int(start)

    def run():
        while start_time(pid) == start:
            time.sleep(1.0)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=run, daemon=True, name="worker-watch").start()


def _serve(request: dict, key: tuple, env) -> None:  # in the forked child: becomes the server, never returns
    from . import adopt as libero_adopt

    def before_run():
        _watch(*request["worker"])  # the zygote outlives workers: its servers die with the worker that asked
        libero_adopt.ADOPTABLE = (key, env)
        print(f"forked from the LIBERO zygote (pid {os.getppid()}) with the built env of {key}", flush=True)

    become_server(request, with_parent=False, before_run=before_run)


def _handle(conn: socket.socket, templates: _Templates) -> None:
    with conn, conn.makefile("rw") as stream:
        try:
            request = json.loads(stream.readline())
            args = request["args"]
            kwargs = _kwargs(args)
            key = template_key(kwargs)
            if key is None or args[:2] != ["--env", TARGET]:
                raise ValueError(f"not a forkable LIBERO env: {args}")
            env = templates.get(key, kwargs)
        except Exception as exc:  # noqa: BLE001 - told to the worker, which starts a fresh server instead
            stream.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
            stream.flush()
            return
        stream.flush()
        pid = os.fork()
        if pid == 0:
            conn.close()
            _serve(request, key, env)
        stream.write(json.dumps({"pid": pid, "start": start_time(pid)}) + "\n")
        stream.flush()


def _peer_uid(conn: socket.socket) -> int:
    import struct

    return struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]


def main(path: str) -> None:
    """Listen on the unix socket ``path`` and fork one server per request until idle (see the module docstring)."""
    from .factory import private_config_dir

    claim_title()  # before LIBERO's imports set environment variables
    private_config_dir()
    import libero.libero.envs  # noqa: F401 - the imports every server would spend ~1 s on
    import rlmesh.serve  # noqa: F401

    from . import env  # noqa: F401

    idle = float(os.environ.get("RLMESH_LIBERO_ZYGOTE_IDLE_SECONDS") or 300)
    templates = _Templates(int(os.environ.get("RLMESH_LIBERO_TEMPLATES") or 2))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # servers are reaped automatically
    tmp = f"{path}.{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o177)  # the socket is created owner-only: a request runs code as this user
    try:
        listener.bind(tmp)
    finally:
        os.umask(umask)
    mine = os.stat(tmp).st_ino
    listener.listen(16)
    os.replace(tmp, path)  # connectable only once it listens
    listener.settimeout(idle)
    print(f"LIBERO zygote {os.getpid()} listening on {path}", flush=True)
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                break
            conn.settimeout(None)
            if _peer_uid(conn) != os.getuid():  # only this user's workers
                conn.close()
                continue
            _handle(conn, templates)
    finally:
        try:
            if os.stat(path).st_ino == mine:  # not a successor's socket
                os.unlink(path)
        except OSError:
            pass


if __name__ == "__main__":
    main(sys.argv[1])
