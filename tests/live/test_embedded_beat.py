"""`celery worker -B` (how make demo and make worker run the worker): the embedded beat ends with the worker, even
when the worker is SIGKILLed. A field case: after kill -9 of the demo's worker its beat lived on as an orphan,
sending the reaper's schedule to no one."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.live import BIN, ROOT

pytestmark = pytest.mark.live


def _children(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
        except (OSError, IndexError):
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _beat_of(worker: subprocess.Popen, log: Path, deadline: float) -> int:
    while time.monotonic() < deadline:
        if b"beat: Starting" in log.read_bytes():
            for child in _children(worker.pid):  # celery titles it (setproctitle is a dependency)
                if Path(f"/proc/{child}/cmdline").read_bytes().startswith(b"[celery beat]"):
                    return child
        assert worker.poll() is None, log.read_text()[-3000:]
        time.sleep(0.2)
    described = {c: Path(f"/proc/{c}/cmdline").read_bytes()[:200] for c in _children(worker.pid)}
    raise AssertionError(f"no embedded beat among {described}:\n" + log.read_text()[-1000:])


def test_the_embedded_beat_ends_when_its_worker_is_killed(live, tmp_path):
    log = tmp_path / "worker.log"
    with open(log, "ab") as out:
        worker = subprocess.Popen(
            [str(BIN / "celery"), "-A", "rlmesh_site", "worker", "-B", "-Q", "maintenance", "-P", "solo", "-n",
             "embedded-test@%h", "-l", "info", "--schedule", str(tmp_path / "schedule")],
            cwd=ROOT, env=live.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        beat = _beat_of(worker, log, time.monotonic() + 90)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        deadline = time.monotonic() + 15
        while _alive(beat) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(beat), f"beat (pid {beat}) outlived its SIGKILLed worker"
    finally:
        try:
            os.killpg(worker.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
