"""The ``local`` runtime: trusted sources served as real ``python -m rlmesh.serve`` subprocesses on loopback.

Envs listen on a unix socket (faster than TCP for image observations, and no port to race for); models
on a free TCP port on 127.0.0.1 (rlmesh's model client accepts only TCP), with ``TCP_NODELAY`` set on their listener
(:mod:`~evaluations.runtime.tcp_nodelay`; ``RLMESH_TCP_NODELAY``), which rlmesh does not set: without it an image
observation stalls ~40 ms per predict. Every server runs in its own process group with ``PR_SET_PDEATHSIG`` so it dies with the worker that started it, even on SIGKILL.
Only trusted sources (``python://`` from the prebuilt catalog) are ever started here.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings

from . import forkserver, tcp_nodelay, zygote
from .forkchild import die_with_parent
from ..prebuilt.lerobot.batching import STATS_ENV
from .base import RuntimeBackend, RuntimeBackendError, ServedEndpoint, ServerSpec, accepts_connections, stats_path

#: What serves a ``kind="inference"`` spec: the host's inference process of a batching LeRobot checkpoint, or of an
#: rlmesh model with a batched corner (any other source; ``evaluations.prebuilt.fused``).
INFERENCE_MODULE = "evaluations.prebuilt.lerobot.inference"
FUSED_MODULE = "evaluations.prebuilt.fused"
CONTAINER_HUB_MODULE = "evaluations.runtime.container_hub"
#: The LeRobot server's target (``prebuilt.lerobot.entry.LEROBOT_SOURCE``'s, not imported: the catalog imports this).
LEROBOT_TARGET = "evaluations.prebuilt.lerobot.policy:LeRobotPolicy"
#: Socket directories are named ``rlm-<pid of the worker process>-…`` so the reaper can tell whose they are.
SOCKET_DIR_PREFIX = "rlm-"


def _die_with_parent() -> None:  # runs in the child between fork and exec
    die_with_parent()
    os.setpgrp()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer(ServedEndpoint):
    """A server process: a ``subprocess.Popen`` or a :class:`~evaluations.runtime.forkserver.ForkedProcess`."""

    def __init__(self, proc, address: str, log_path: Path, sock_dir: str | None):
        self.proc = proc
        self.address = address
        self.log_path = log_path
        self._sock_dir = sock_dir
        self.ready_seconds = 0.0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    # SIGKILLed but not yet reaped (a 2 GB LIBERO env on a loaded host takes a while to free): it
                    # cannot run on, so stopping it is no reason to fail the shard; a later poll reaps it.
                    pass
        if self._sock_dir:
            shutil.rmtree(self._sock_dir, ignore_errors=True)

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def final_output(self, lines: int = 20) -> str:
        """The log file's last lines once the process has exited: the server writes its log file itself (no pipe,
        no engine between), so once it is reaped every line it wrote is there. Waits up to
        ``RLMESH_CONTAINER_OUTPUT_WAIT`` seconds for the exit."""
        try:
            self.proc.wait(timeout=settings.RLMESH_CONTAINER_OUTPUT_WAIT)
        except subprocess.TimeoutExpired:
            pass
        return self.log_tail(lines)


def installed_python(name: str) -> str | None:
    """The interpreter of the venv ``settings.RLMESH_PYTHON_ENVS[name]`` (``metaworld``, ``libero``, ``lerobot``) when
    that venv is installed, else None. Installed means its install stamp ``<venv>/.installed`` (the folder above
    ``bin/python``) is there: scripts/venv-lib.sh writes it last, so a venv whose install is still running or broke
    halfway (``bin/python`` present, its packages not) counts as missing. An interpreter the operator names
    elsewhere (``RLMESH_<NAME>_PYTHON`` outside a ``.venv-<name>`` folder, a venv our scripts did not build) only has
    to exist."""
    python = settings.RLMESH_PYTHON_ENVS.get(name)
    if not python or not Path(python).exists():
        return None
    ours = Path(python).parent.parent.name == f".venv-{name}"
    return str(python) if not ours or (Path(python).parent.parent / ".installed").is_file() else None


def interpreter_for(source: str) -> tuple[str, str]:
    """``(python executable, "module:Target")`` of a trusted source.

    ``python://module:Target`` runs on this process's interpreter; ``python+<name>://module:Target`` on the
    interpreter ``settings.RLMESH_PYTHON_ENVS[name]`` (a separate venv, e.g. Meta-World's, which pins its own
    MuJoCo). Raises RuntimeBackendError for other sources or a venv that is not installed.
    """
    scheme, sep, target = source.partition("://")
    if not sep or not (scheme == "python" or scheme.startswith("python+")):
        raise RuntimeBackendError(f"the local runtime cannot serve {source!r}")
    if scheme == "python":
        return sys.executable, target
    name = scheme.removeprefix("python+")
    python = installed_python(name)
    if python is None:
        configured = settings.RLMESH_PYTHON_ENVS.get(name)
        raise RuntimeBackendError(
            f"the {name!r} Python environment is not installed ({configured or 'not configured'}; no install stamp "
            f".installed beside its bin/); run scripts/setup-{name}.sh on this worker host"
        )
    return python, target


def serve_command(python: str, args: list[str], *, nodelay: bool) -> list[str]:
    """The command line serving ``rlmesh.serve <args>`` on ``python``: through :mod:`.tcp_nodelay` (run as a file, so
    any venv's interpreter runs it) when ``nodelay``, else ``python -m rlmesh.serve`` itself."""
    return [python, *([tcp_nodelay.__file__] if nodelay else []), "-m", "rlmesh.serve", *args]


class LocalRuntime(RuntimeBackend):
    """Serve trusted ``python://module:Target`` (or ``python+<venv>://``) sources as subprocesses (see module
    docstring)."""

    def start(self, spec: ServerSpec, *, name: str, labels: dict | None = None) -> LocalServer:
        """Start the server. ``spec.env_vars`` are deliberately not passed: the process runs as the worker, where
        variables such as ``PYTHONWARNINGS`` or ``LD_PRELOAD`` from a request would execute code. ``spec.secrets``
        are: their names come from the platform, only their values from a request."""
        in_container = spec.kind == "inference" and spec.source.startswith("oci://")
        # A batched image's inference process runs in a container that a local process owns (runtime.container_hub);
        # ``labels["name"]`` is the container's name for the reaper.
        python, target = (sys.executable, "") if in_container else interpreter_for(spec.source)
        log_dir = Path(settings.RLMESH_RUN_DIR)
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{name}.log"
        sock_dir = None
        if spec.kind in ("env", "inference"):
            # Unix socket paths are limited to ~107 bytes, so they live in a short temp dir (0700).
            sock_dir = tempfile.mkdtemp(prefix=f"{SOCKET_DIR_PREFIX}{os.getpid()}-")
            address = f"unix://{sock_dir}/{spec.kind}.sock"
            argv = ["--env", target] if spec.kind == "env" else []
        else:
            address = f"127.0.0.1:{_free_port()}"
            argv = [target]
        args = [*argv, "--address", address] + (["--kwargs-json", json.dumps(spec.kwargs)] if spec.kwargs else [])
        nodelay = settings.RLMESH_TCP_NODELAY and tcp_nodelay.is_tcp(address)
        stats_path(log_path).unlink(missing_ok=True)  # a model server of the same name before this one
        cmd = (serve_command(python, args, nodelay=nodelay) if spec.kind != "inference"
               else [python, "-m", CONTAINER_HUB_MODULE, "--source", spec.source, "--label",
                     (labels or {}).get("name", name), "--env-json", json.dumps(spec.env_vars), *args] if in_container
               else [python, "-m", INFERENCE_MODULE, *args] if target == LEROBOT_TARGET
               else [python, "-m", FUSED_MODULE, "--target", target, *args])
        env = {
            **os.environ,
            "RLMESH_WORKFLOW_EDITION": settings.RLMESH_WORKFLOW_EDITION,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(p for p in (str(settings.BASE_DIR), os.environ.get("PYTHONPATH", "")) if p),
            **spec.secrets,  # names chosen by the platform (unlike env_vars above): safe on the worker host
            **({STATS_ENV: str(stats_path(log_path))} if spec.kind in ("model", "inference") else {}),
        }
        started = time.monotonic()
        proc = None
        if python == sys.executable and settings.RLMESH_LOCAL_FORKSERVER and spec.kind != "inference":
            try:
                proc = forkserver.start(args, env=env, log_path=str(log_path), cwd=str(settings.BASE_DIR),
                                        nodelay=nodelay)
            except OSError:
                proc = None  # a broken forkserver costs speed, never the episode: start a fresh interpreter
        if proc is None and zygote.serves(spec, python, target):
            try:  # a LIBERO env without cameras: forked from the process holding the task's built env
                proc = zygote.start(spec, python, args, env=env, log_path=str(log_path), cwd=str(settings.BASE_DIR))
            except OSError as exc:  # as with the forkserver: a fresh interpreter instead
                logging.getLogger(__name__).warning("LIBERO zygote unavailable (%s): starting %s fresh", exc, name)
                proc = None
        if proc is None:  # another venv's interpreter (python+<venv>://), or the forkserver turned off
            with open(log_path, "ab") as log_file:
                proc = subprocess.Popen(
                    cmd, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                    preexec_fn=_die_with_parent, cwd=str(settings.BASE_DIR),
                )
        server = LocalServer(proc, address, log_path, sock_dir)
        if spec.kind in ("model", "inference"):
            server.stats_path = stats_path(log_path)
        return self.become_ready(server, lambda: self._wait_ready(server, spec.kind, started, spec.ready_limit), started)

    def _wait_ready(self, server: LocalServer, kind: str, started: float, timeout: float) -> None:
        deadline = started + timeout
        while True:
            if not server.alive():
                output = server.final_output()
                raise RuntimeBackendError(
                    f"{kind} server exited with code {server.proc.returncode} before it was ready", log_tail=output,
                )
            if accepts_connections(server.address, kind):
                return
            if time.monotonic() > deadline:
                raise RuntimeBackendError(
                    f"{kind} server not ready after {timeout:g} s", permanent=False, log_tail=server.stop_with_output(),
                )
            time.sleep(0.1)
