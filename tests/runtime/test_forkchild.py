"""The body every forked server runs (evaluations/runtime/forkchild.py), shared by the forkserver and LIBERO's zygote.

The server itself (``runpy.run_module("rlmesh.serve")``) is replaced in the child by a stand-in that writes what it
sees and ends as told; the exit status the parent reads is the one a worker would see.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from evaluations.runtime.forkchild import become_server

ROOT = Path(__file__).resolve().parents[2]


def _fork(tmp_path, ending, before_run=None) -> tuple[int, str]:
    log = tmp_path / "server.log"
    request = {"args": ["--env", "x:Y", "--address", "unix:///tmp/none"], "env": {"ONLY": "this"}, "log": str(log),
               "cwd": str(tmp_path)}
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        def serve(name, run_name, alter_sys):
            print(json.dumps({"module": name, "argv": __import__("sys").argv, "env": dict(os.environ),
                              "cwd": os.getcwd(), "pgid_is_pid": os.getpgrp() == os.getpid()}), flush=True)
            ending()

        runpy.run_module = serve
        become_server(request, with_parent=True, before_run=before_run)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), log.read_text()


def _exit(code):
    def end():
        raise SystemExit(code)
    return end


@pytest.mark.parametrize(("ending", "code"), [
    (lambda: None, 0),  # the server returned
    (_exit(None), 0),  # sys.exit(): Python exits 0, and so does the child
    (_exit(3), 3),
    (_exit("a message"), 1),
])
def test_the_child_exits_with_the_servers_code(tmp_path, ending, code):
    got, _ = _fork(tmp_path, ending)
    assert got == code


def test_the_child_serves_in_the_workers_environment_with_its_output_in_the_log(tmp_path):
    got, log = _fork(tmp_path, lambda: None, before_run=lambda: print("before run", os.environ.get("ONLY"), flush=True))
    assert got == 0
    first, second = log.splitlines()[:2]
    assert first == "before run this"  # before_run sees the environment already in place, and its output is logged
    seen = json.loads(second)
    assert seen["module"] == "rlmesh.serve" and seen["argv"] == ["rlmesh.serve", "--env", "x:Y", "--address",
                                                                  "unix:///tmp/none"]
    assert seen["env"] == {"ONLY": "this"} and seen["cwd"] == str(tmp_path) and seen["pgid_is_pid"]


def test_an_error_in_the_server_is_exit_1_with_its_traceback_in_the_log(tmp_path):
    def boom():
        raise RuntimeError("the env could not be built")

    got, log = _fork(tmp_path, boom)
    assert got == 1 and "RuntimeError: the env could not be built" in log and "Traceback" in log


_TITLE_SCRIPT = """
import os, sys, time
from evaluations.runtime import forkchild
if sys.argv[1] == "claim":
    forkchild.claim_title()
first = next(iter(os.environ))
os.environ[first] = os.environ[first] + "x"  # a library sets the first environment variable again
pid = os.fork()
if pid == 0:
    import setproctitle
    setproctitle.setproctitle("python -m rlmesh.serve --env a.long.module.path:Environment")
    time.sleep(2)
    os._exit(0)
time.sleep(0.5)
print(open(f"/proc/{pid}/cmdline").read().replace(chr(0), " "))
os.waitpid(pid, 0)
"""


@pytest.mark.parametrize("claim", [True, False])
def test_a_forked_server_shows_its_title_even_after_the_first_environment_variable_is_set_again(claim):
    """The field case: LIBERO's zygote set its first environment variable again, and its servers' ps line stayed the
    zygote's. claim_title() at start-up keeps the title settable; without it the title is lost (the control)."""
    pytest.importorskip("setproctitle")
    out = subprocess.run([sys.executable, "-c", _TITLE_SCRIPT, "claim" if claim else "no"], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.startswith("python -m rlmesh.serve --env a.long.module.path:Environment") is claim, out
