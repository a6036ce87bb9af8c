"""A server that prints and exits at once keeps its last words, on a busy host, in every runtime.

Podman stores a line written in two pieces (Python with ``PYTHONUNBUFFERED`` writes a message and its newline apart)
as a partial record and a newline record; its ``logs --tail`` then returns only the newline. A loaded host makes the
split likely, so these tests load both cores with a CPU hog they start themselves and repeat the crash.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from evaluations.runtime.base import RuntimeBackendError, ServerSpec
from evaluations.runtime.docker import Container, DockerRuntime
from evaluations.runtime.local import LocalRuntime
from tests.support.live import ROOT

BROKEN = "localhost/rlmesh-broken-crash:latest"
MESSAGE = "configuration error: missing weights"
#: Crashes per runtime: without the fix, Podman split the line in 4 of 10 crashes beside a test run.
CRASHES = 8


@pytest.fixture()
def cpu_hog():
    """Busy loops on every core (plus one), ended with the test."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range((os.cpu_count() or 2) + 1)]
    try:
        yield
    finally:
        for hog in hogs:
            os.killpg(hog.pid, signal.SIGKILL)
            hog.wait()


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """Podman's Docker-compatible API on a private socket, with the broken image built."""
    subprocess.run(["bash", "containers/base/build-base.sh"], cwd=ROOT, check=True, capture_output=True, timeout=900)
    if subprocess.run(["podman", "image", "exists", BROKEN]).returncode != 0:
        subprocess.run(["bash", "containers/build-images.sh"], cwd=ROOT, check=True, capture_output=True, timeout=600)
    sock = tmp_path_factory.mktemp("podman") / "podman.sock"
    service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"], start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if sock.exists():
            break
        time.sleep(0.1)
    import docker

    client = docker.DockerClient(base_url=f"unix://{sock}", timeout=120)
    try:
        yield client
    finally:
        client.close()
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=30)


@pytest.mark.containers
def test_a_crashing_container_keeps_its_last_words_under_load(engine, cpu_hog):
    outputs = []
    for _ in range(CRASHES):
        server = Container(engine.containers.run(BROKEN, detach=True), "")
        # The readiness loop the probe and every evaluation use: it sees the exit and raises with the output.
        with pytest.raises(RuntimeBackendError) as failure:
            DockerRuntime()._wait_ready(server, "image", time.monotonic())
        server.stop()
        assert "exited with code 3 before it was ready" in str(failure.value)
        outputs.append(failure.value.log_tail)
    assert all(MESSAGE in out for out in outputs), outputs


@pytest.mark.containers
def test_a_container_stopped_at_the_end_of_a_shard_keeps_its_last_words(engine, cpu_hog):
    """``stop_with_output`` (the runner's close): stopped first, so what it prints as it ends is in, then removed."""
    script = ("import signal, sys, time\n"
              "def bye(*_):\n"
              "    sys.stderr.write('shutting down: flushed 3 files'); sys.stderr.flush(); sys.stderr.write('\\n')\n"
              "    sys.exit(0)\n"
              "signal.signal(signal.SIGTERM, bye)\n"
              "print('serving', flush=True)\n"
              "time.sleep(600)\n")
    for _ in range(3):
        container = engine.containers.run(BROKEN, entrypoint=["python3", "-c", script], detach=True)
        server = Container(container, "")
        for _ in range(100):
            if "serving" in server.log_tail():
                break
            time.sleep(0.1)
        out = server.stop_with_output()
        assert "shutting down: flushed 3 files" in out and "serving" in out, out
        assert not engine.containers.list(all=True, filters={"id": container.id})  # removed


def test_a_local_server_that_crashes_at_start_keeps_its_last_words_under_load(settings, tmp_path, cpu_hog):
    settings.RLMESH_RUN_DIR = str(tmp_path)
    settings.RLMESH_LOCAL_FORKSERVER = False  # a fresh interpreter, as servers of other venvs start
    for i in range(3):
        with pytest.raises(RuntimeBackendError) as failure:
            LocalRuntime().start(ServerSpec("env", "python://tests.support.envs:BrokenAtStart"), name=f"broken-{i}")
        assert "before it was ready" in str(failure.value)
        assert "this env cannot be built" in failure.value.log_tail, failure.value.log_tail
