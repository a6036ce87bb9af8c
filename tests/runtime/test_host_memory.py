"""Host-wide memory admission of env servers that declare their memory (evaluations.runtime.memory): the ledger is
shared by real processes through a locked file, and a shard waits for room before starting its env server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

from evaluations.choices import EvaluationStatus, ShardStatus
from evaluations.models import Episode, Shard
from evaluations.runs import lifecycle as svc
from evaluations.runtime import memory
from evaluations.runtime.memory import HostMemoryLedger
from tests.conftest import cartpole_request
from tests.support.live import ROOT

GB = 2**30

HOLDER = """
import sys, time
from evaluations.runtime.memory import HostMemoryLedger
r = HostMemoryLedger(sys.argv[1], int(sys.argv[2])).try_reserve(int(sys.argv[3]), "holder")
print("held" if r else "refused", flush=True)
time.sleep(600)
"""


@contextmanager
def holding(path, budget: int, nbytes: int):
    """Another process on this host that reserves ``nbytes`` and keeps them until it is killed (at the latest when
    the block ends); yields its Popen."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(budget), str(nbytes)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def run_the_shard(evaluation) -> str | None:
    from evaluations.runs import loop

    (shard,) = Shard.objects.filter(evaluation=evaluation)
    return loop.run_shard(shard.pk)


def test_reservations_fit_the_budget_and_a_release_gives_room_back(tmp_path):
    ledger = HostMemoryLedger(tmp_path / "ledger.json", 7 * GB)
    first, second = ledger.try_reserve(3 * GB, "a"), ledger.try_reserve(3 * GB, "b")
    assert first and second and ledger.try_reserve(3 * GB, "c") is None  # 9 GB > 7 GB
    assert sorted(e["what"] for e in ledger.held().values()) == ["a", "b"]
    first.release()
    first.release()  # idempotent: gives back nothing twice
    third = ledger.try_reserve(3 * GB, "c")
    assert third and sum(e["bytes"] for e in ledger.held().values()) == 6 * GB


def test_an_env_larger_than_the_budget_still_runs_alone(tmp_path):
    ledger = HostMemoryLedger(tmp_path / "ledger.json", 2 * GB)
    big = ledger.try_reserve(5 * GB, "big")
    assert big and ledger.try_reserve(1, "tiny") is None
    big.release()
    assert ledger.try_reserve(1, "tiny")


def test_another_processes_reservation_counts_until_that_process_dies(tmp_path):
    path = tmp_path / "ledger.json"
    with holding(path, 4 * GB, 3 * GB) as proc:
        ledger = HostMemoryLedger(path, 4 * GB)
        assert ledger.try_reserve(3 * GB, "mine") is None
        assert [e["pid"] for e in ledger.held().values()] == [proc.pid]
    assert ledger.try_reserve(3 * GB, "mine")  # a SIGKILLed holder frees its bytes at the next look


def test_an_entry_whose_pid_was_reused_by_another_process_is_dropped(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = HostMemoryLedger(path, 4 * GB)
    ledger.try_reserve(3 * GB, "mine")
    entries = json.loads(path.read_text())
    (key,) = entries
    entries[key]["start"] = "1"  # the same pid, started at another time: not the process that reserved
    path.write_text(json.dumps(entries))
    assert ledger.held() == {}


def test_a_torn_ledger_file_starts_over(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text('{"123:ab": {"pid"')
    ledger = HostMemoryLedger(path, 4 * GB)
    assert ledger.held() == {} and ledger.try_reserve(3 * GB, "mine")


def test_reserve_waits_tells_once_and_gives_up_when_told_to_stop(tmp_path):
    ledger = HostMemoryLedger(tmp_path / "ledger.json", 4 * GB)
    ledger.try_reserve(3 * GB, "first")
    told, checks = [], []

    def stop():
        checks.append(1)
        return len(checks) >= 3

    assert ledger.reserve(3 * GB, "second", stop=stop, on_wait=told.append, poll_seconds=0.01) is None
    assert len(told) == 1 and [e["what"] for e in told[0].values()] == ["first"] and len(checks) == 3


def test_the_default_ledger_is_host_wide_unless_configured(settings, tmp_path, monkeypatch):
    monkeypatch.delenv("RLMESH_HOST_MEMORY_LEDGER", raising=False)
    settings.RLMESH_HOST_MEMORY_LEDGER = None
    import os
    import tempfile

    shm = os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)
    expected = "/dev/shm" if shm else tempfile.gettempdir()
    assert str(memory.default_ledger_path()) == f"{expected}/rlmesh-env-memory.json"
    settings.RLMESH_HOST_MEMORY_LEDGER = str(tmp_path / "x.json")
    assert memory.default_ledger_path() == tmp_path / "x.json"


# ------------------------------------------------------------------- the shard loop


@pytest.fixture
def heavy_cartpole(tenant_a, settings, tmp_path, monkeypatch):
    """A CartPole evaluation whose env declares 3 GB, on a host whose envs may take 3 GB (4 GB × 0.75), with the
    ledger in ``tmp_path``; returns ``(evaluation, ledger path)``."""
    from evaluations.models import ImageVersion
    from evaluations.planning import plan_evaluation
    from evaluations.prebuilt.catalog import MEMORY_LABEL
    from evaluations.runs import loop

    monkeypatch.setattr(loop, "HEARTBEAT_SECONDS", 3600)
    settings.RLMESH_HOST_MEMORY_LEDGER = str(tmp_path / "ledger.json")
    settings.RLMESH_WORKER_HOST_MEMORY_BYTES = 4 * GB
    settings.RLMESH_ENV_MEMORY_FRACTION = 0.75
    body = cartpole_request()
    body["tasks"][0]["episodes"] = 2
    plan = plan_evaluation(body, organization=tenant_a.org)
    evaluation = svc.create_evaluation(plan=plan, raw_body="{}", organization=tenant_a.org, creator=tenant_a.user)
    version = evaluation.workloads.get().env_version
    ImageVersion.objects.filter(pk=version.pk).update(labels={**version.labels, MEMORY_LABEL: str(3 * GB)})
    return evaluation, tmp_path / "ledger.json"


@pytest.mark.django_db
def test_a_shard_waits_for_host_memory_then_runs_and_gives_it_back(heavy_cartpole, monkeypatch):
    evaluation, path = heavy_cartpole
    slept, real_sleep = [], time.sleep
    with holding(path, 3 * GB, 3 * GB) as holder:  # another worker's env holds the host's whole budget

        def sleep(seconds):  # the holder's shard ends while ours waits
            slept.append(seconds)
            if len(slept) == 2:
                holder.kill()
                holder.wait()
            real_sleep(0.01)

        monkeypatch.setattr(memory.time, "sleep", sleep)
        assert run_the_shard(evaluation) == ShardStatus.COMPLETED
    shard = Shard.objects.get(evaluation=evaluation)
    assert len(slept) >= 2 and Episode.objects.filter(evaluation=evaluation, status="completed").count() == 2
    waiting = evaluation.logs.get(message__startswith="waiting for memory")
    assert "3.0 GB" in waiting.message and "1 env servers hold 3.0 GB of the 3.0 GB" in waiting.message
    assert len(shard.timings["memoryWaitSeconds"]) == 1  # one wait, before the first start
    assert HostMemoryLedger(path, 3 * GB).held() == {}  # released when the shard closed its servers


@pytest.mark.django_db
def test_a_shard_cancelled_while_waiting_for_memory_starts_no_server(heavy_cartpole, monkeypatch):
    evaluation, path = heavy_cartpole
    with holding(path, 3 * GB, 3 * GB):
        monkeypatch.setattr(memory.time, "sleep", lambda s: svc.cancel_evaluation(evaluation))
        assert run_the_shard(evaluation) == ShardStatus.CANCELLED
    evaluation.refresh_from_db()
    assert evaluation.status == EvaluationStatus.CANCELLED and not Episode.objects.filter(evaluation=evaluation).exists()
    assert not evaluation.logs.filter(message__contains="server prebuilt").exists()  # no env server was started


def test_a_model_server_is_counted_once_for_as_long_as_it_runs(tmp_path):
    """Issue 36: the host ledger counts a (shared) model server's memory once, named by the server's own process,
    whatever the budget (what it holds is held already), and the envs admitted after it see it."""
    ledger = HostMemoryLedger(tmp_path / "ledger.json", 4 * GB)
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        ledger.record(3 * GB, "model prebuilt/lerobot/tiny-act", server.pid)
        ledger.record(2 * GB, "model over the budget, counted all the same", server.pid)
        assert sum(e["bytes"] for e in ledger.held().values()) == 5 * GB
        assert ledger.try_reserve(1 * GB, "an env") is None  # the envs see it
    finally:
        server.kill()
        server.wait()
    assert ledger.held() == {}  # gone with its process
    assert ledger.try_reserve(1 * GB, "an env") is not None


def test_a_lerobot_model_servers_memory_is_its_base_and_its_weights(tmp_path, settings):
    from evaluations.prebuilt.catalog import MEMORY_LABEL, model_memory
    from evaluations.prebuilt.lerobot.checkpoints import SERVER_BASE_BYTES
    from evaluations.runtime import ServerSpec

    folder = tmp_path / "tiny-act"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"\0" * 1000)
    (folder / "config.json").write_text("{}")
    source = "python+lerobot://evaluations.prebuilt.lerobot.policy:LeRobotPolicy"
    car = ServerSpec("model", source, {"root": str(tmp_path), "folder": "tiny-act", "sha256": "x"})
    assert model_memory(car, None) == SERVER_BASE_BYTES + 1000
    settings.RLMESH_LEROBOT_CHECKPOINTS = str(tmp_path)  # prebuilt/lerobot/<folder>: the root is the setting
    assert model_memory(ServerSpec("model", source, {"folder": "tiny-act"}), None) == SERVER_BASE_BYTES + 1000
    smolvla = ServerSpec("model", "python+lerobot://evaluations.prebuilt.lerobot.smolvla:SmolVLALibero",
                         {"policy_dir": str(folder)})
    assert model_memory(smolvla, None) == SERVER_BASE_BYTES + 1000

    class Version:
        labels = {MEMORY_LABEL: str(5 * GB)}

    assert model_memory(ServerSpec("model", "python://evaluations.prebuilt.models:Random"), Version) == 5 * GB
    Version.labels = {}
    assert model_memory(ServerSpec("model", "python://evaluations.prebuilt.models:Random"), Version) == 0
