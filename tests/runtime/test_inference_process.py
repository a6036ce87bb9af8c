"""The shard's view of a batching model (runtime.inference): which specs take the host inference process, and a
:class:`BatchedModel` that is alive only while both of its processes are, stops both, reports the inference process's
batches and blames the model only for what its own processes did."""

from __future__ import annotations

import pytest

from evaluations.prebuilt.lerobot.entry import LEROBOT_SOURCE
from evaluations.runtime import ServerSpec, inference
from evaluations.runtime.base import ServedEndpoint


class Fake(ServedEndpoint):
    reused = False  # as a lease on a process acquire() has just started

    def __init__(self, address="unix:///x/s.sock", owner=None, orphan=False, stats=None):
        self.address, self.ready_seconds, self.up, self.stopped = address, 1.5, True, 0
        self.owner, self._orphan, self.stats_path = owner, orphan, stats

    def alive(self):
        return self.up

    def stop(self):
        self.stopped += 1
        self.up = False

    def log_tail(self, lines=20):
        return f"tail of {self.address}"

    def orphaned(self):
        return self._orphan


def test_only_the_lerobot_server_with_a_batch_shape_takes_the_inference_process():
    assert inference.batches(ServerSpec("model", LEROBOT_SOURCE, {"folder": "f", "batch": 4}))
    assert not inference.batches(ServerSpec("model", LEROBOT_SOURCE, {"folder": "f"}))
    assert not inference.batches(ServerSpec("model", LEROBOT_SOURCE, {"folder": "f", "batch": 0}))
    assert not inference.batches(ServerSpec("model", LEROBOT_SOURCE, {"folder": "f", "batch": "many"}))
    assert not inference.batches(ServerSpec("model", "python://evaluations.prebuilt.models:Random", {"batch": 4}))
    assert not inference.batches(ServerSpec("env", LEROBOT_SOURCE, {"batch": 4}))


def test_a_batched_model_lives_with_both_processes_and_stops_both(tmp_path):
    thin, hub = Fake("127.0.0.1:5"), Fake(owner=7, stats=tmp_path / "b.json")
    model = inference.BatchedModel(thin, hub)
    assert model.address == "127.0.0.1:5" and model.stats_path == hub.stats_path and model.owner == 7
    assert model.ready_seconds == pytest.approx(3.0) and model.alive()
    hub.up = False  # the inference process died: the shard restarts its model
    assert not model.alive() and not model.orphaned()
    assert "the host's inference process" in model.log_tail()
    model.stop()
    assert thin.stopped == 1 and hub.stopped == 1
    assert inference.BatchedModel(Fake(), Fake(orphan=True)).orphaned()  # its starter died: not the model's fault


def test_starting_fails_cleanly_when_the_thin_server_cannot_start(settings, monkeypatch, tmp_path):
    """The thin server failing to start releases the lease it took, so no inference process is left behind."""
    from evaluations.runtime import shared

    settings.RLMESH_RUN_DIR = str(tmp_path)
    hub = Fake()
    monkeypatch.setattr(shared, "acquire", lambda key, start: hub)
    started = []

    class Backend:
        def start(self, spec, *, name):
            started.append((spec.kind, dict(spec.kwargs), sorted(spec.secrets)))
            raise RuntimeError("thin server exited")

    spec = ServerSpec("model", LEROBOT_SOURCE, {"folder": "f", "batch": 4})
    with pytest.raises(RuntimeError, match="thin server exited"):
        inference.start("model-1-abc", spec, Backend(), "shard-1-model", lambda server: None)
    assert hub.stopped == 1
    assert started == [("model", {"inference": hub.address}, ["RLMESH_INFERENCE_KEY"])]


def test_a_process_that_cannot_be_counted_is_stopped_not_left_running(settings, monkeypatch):
    from evaluations.runtime import shared

    hub, keys = Fake(), []
    monkeypatch.setattr(shared, "acquire", lambda key, start: keys.append(key) or start())

    class Backend:
        def start(self, spec, *, name):
            assert name.startswith("shard-1-model-inference-") and len(name) == len("shard-1-model-inference-") + 8
            return hub

    def ledger_broke(server):
        raise ValueError("ledger broke")

    with pytest.raises(ValueError, match="ledger broke"):
        inference.start("model-1-abc", ServerSpec("model", LEROBOT_SOURCE, {"batch": 4}), Backend(), "shard-1-model",
                        ledger_broke)
    assert hub.stopped == 1
    settings.SECRET_KEY = "another"  # a worker mid-deploy derives another key: another registry entry
    with pytest.raises(ValueError):
        inference.start("model-1-abc", ServerSpec("model", LEROBOT_SOURCE, {"batch": 4}), Backend(), "shard-1-model",
                        ledger_broke)
    assert keys[0] != keys[1] and all(k.startswith("model-1-abc-") for k in keys)


def test_the_last_lease_removes_the_shared_servers_socket_directory(settings, tmp_path):
    import subprocess

    from evaluations.runtime import shared

    settings.RLMESH_RUN_DIR = str(tmp_path)
    sock_dir = tmp_path / "rlm-1-x"
    sock_dir.mkdir()
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)

    class Started:
        def __init__(self):
            self.proc, self.address, self.log_path = proc, f"unix://{sock_dir}/inference.sock", tmp_path / "hub.log"
            self.ready_seconds, self._sock_dir = 0.1, str(sock_dir)

    try:
        lease = shared.acquire("k", Started)
        again = shared.acquire("k", lambda: pytest.fail("a second start"))
        lease.stop()
        assert sock_dir.exists()  # another lease holds it
        again.stop()
        assert not sock_dir.exists()
        proc.wait(timeout=5)
    finally:
        proc.kill()
        proc.wait()


def test_a_server_gone_right_after_it_became_ready_is_not_recorded_as_alive(settings, tmp_path):
    import subprocess

    from evaluations.runtime import shared
    from evaluations.runtime.base import RuntimeBackendError

    settings.RLMESH_RUN_DIR = str(tmp_path)
    gone = subprocess.Popen(["true"])
    gone.wait()

    class Started(Fake):
        proc, log_path = gone, tmp_path / "gone.log"

    with pytest.raises(RuntimeBackendError, match="exited right after it became ready"):
        shared.acquire("k2", Started)
    assert not (tmp_path / "shared" / "k2.json").exists()


def test_a_wedged_process_found_running_is_killed_and_another_started(settings, monkeypatch):
    from evaluations.runtime import shared

    class Lease(Fake):
        def __init__(self, reused):
            super().__init__()
            self.reused, self.killed = reused, 0

        def kill(self):
            self.killed += 1

    reused, fresh = Lease(True), Lease(False)
    leases = iter([reused, fresh])
    monkeypatch.setattr(shared, "acquire", lambda key, start: next(leases))
    monkeypatch.setattr(inference, "responsive", lambda address, key: False)

    class Backend:
        def start(self, spec, *, name):
            return Fake("127.0.0.1:9")

    model = inference.start("model-1-abc", ServerSpec("model", LEROBOT_SOURCE, {"batch": 4}), Backend(), "s-model",
                            lambda server: None)
    assert reused.killed == 1 and model.hub is fresh  # a fresh one is never pinged: it has just loaded


def test_responsive_asks_the_process_and_reads_a_stall(settings, monkeypatch):
    calls = []

    class Client:
        def __init__(self, address, key):
            calls.append((address, key))

        def ping(self):
            return self.stalled

        def close(self):
            calls.append("closed")

    settings.RLMESH_INFERENCE_STALL_SECONDS = 60
    monkeypatch.setattr(inference, "InferenceClient", Client)
    Client.stalled = 5.0
    assert inference.responsive("unix:///x", b"k") and calls == [("unix:///x", b"k"), "closed"]
    Client.stalled = 61.0
    assert not inference.responsive("unix:///x", b"k")

    def unreachable(self):
        raise RuntimeError("the host's inference process is unreachable")

    Client.ping = unreachable
    assert not inference.responsive("unix:///x", b"k")


def test_killing_a_shared_server_ends_it_whatever_its_leases_and_the_next_lease_starts_another(settings, tmp_path):
    import subprocess

    from evaluations.runtime import shared

    settings.RLMESH_RUN_DIR = str(tmp_path)
    procs = []

    class Started:
        def __init__(self):
            procs.append(subprocess.Popen(["sleep", "30"], start_new_session=True))
            self.proc, self.address, self.log_path = procs[-1], "unix:///x", tmp_path / "s.log"
            self.ready_seconds, self._sock_dir = 0.1, None

    try:
        first = shared.acquire("w", Started)
        other = shared.acquire("w", Started)  # another shard's lease on the same process
        assert other.reused and not first.reused
        other.kill()
        assert procs[0].wait(timeout=5) == -15  # SIGTERM first: an image's owner removes its container then
        assert not first.alive()  # the shard holding it sees it gone and restarts its model
        again = shared.acquire("w", Started)
        assert len(procs) == 2 and again.pid == procs[1].pid and again.alive()
        again.stop()
        first.stop()  # its server was replaced meanwhile: nothing of the new one is touched
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_stopped_shared_server_is_killed_when_its_last_lease_ends(settings, tmp_path, monkeypatch):
    """Found by a fresh user: an inference process stopped with SIGSTOP (wedged, as far as anyone can tell) never
    handles the SIGTERM of its last lease and outlived its evaluation. Past the grace it is killed."""
    import signal
    import subprocess

    from evaluations.runtime import shared
    from tests.support.live import wait_for

    settings.RLMESH_RUN_DIR = str(tmp_path)
    monkeypatch.setattr(shared, "STOP_GRACE", 1.0)
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)

    class Started:
        def __init__(self):
            self.proc, self.address, self.log_path = proc, "unix:///x/inference.sock", tmp_path / "hub.log"
            self.ready_seconds = 0.1

    try:
        lease = shared.acquire("stopped", Started)
        proc.send_signal(signal.SIGSTOP)
        # Stopped for real before its SIGTERM (a SIGTERM pending beside the SIGSTOP may be acted on first).
        wait_for(lambda: open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "T", timeout=5,
                 interval=0.01)
        lease.stop()
        assert proc.wait(timeout=5) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()


def test_the_batch_sizes_an_image_writes_are_copied_only_as_a_small_regular_file(tmp_path):
    """The socket folder is the image's to write: the worker's side copies the batch sizes from it without following
    a link, opening a FIFO or reading without bound (a link to /dev/zero would fill the worker's memory)."""
    import json
    import os

    from evaluations.runtime.container_hub import STATS_MAX, copy_stats

    source, dest = tmp_path / "model.batches.json", tmp_path / "host.json"
    source.write_text(json.dumps({"size": 4, "calls": {"4": 3}}))
    assert copy_stats(source, str(dest)) and json.loads(dest.read_text())["calls"] == {"4": 3}
    dest.unlink()
    for trap in ("link", "fifo", "big", "list"):
        source.unlink()
        if trap == "link":
            source.symlink_to("/dev/zero")
        elif trap == "fifo":
            os.mkfifo(source)
        elif trap == "big":
            source.write_text(json.dumps({"calls": {}, "pad": "x" * STATS_MAX}))
        else:
            source.write_text("[1, 2]")
        assert not copy_stats(source, str(dest)) and not dest.exists(), trap
