"""Batched inference that keeps every episode's seed (issue 36): the batcher gathers concurrent chunk requests into
fixed-shape forward passes; a tiny ACT and a tiny SmolVLA checkpoint (lerobot 0.4.4's own classes) give each
episode the same actions whether it ran alone or batched with others; the platform records the batch shape on the
workload, shares one server between an evaluation's workloads of one model, reports the batch sizes its servers
saw, and does the same on PostgreSQL + Redis with two worker processes sharing the host's inference process."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from evaluations.prebuilt.lerobot.batching import ChunkBatcher, batchable, read_stats
from evaluations.reports.scores import model_batches
from evaluations.runtime import ServerSpec
from evaluations.runtime.shared import model_key
from tests.support.execution import create, episodes, run_all
from tests.support.libero import ROOT, needs_libero_venv
from tests.support.live import wait_for

LEROBOT_PYTHON = ROOT / ".venv-lerobot" / "bin" / "python"
needs_lerobot_venv = pytest.mark.skipif(not LEROBOT_PYTHON.exists(), reason="needs .venv-lerobot (make test-setup)")


def _concurrently(batcher, rows) -> list:
    results = [None] * len(rows)
    barrier = threading.Barrier(len(rows))

    def one(i):
        barrier.wait()
        results[i] = batcher.submit(rows[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(rows))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return results


def test_concurrent_requests_share_one_forward_pass_of_the_fixed_shape(tmp_path):
    shapes = []

    def compute(rows):
        shapes.append(list(rows))
        return [r * 10 for r in rows]

    stats = tmp_path / "model.batches.json"
    batcher = ChunkBatcher(compute, size=4, max_wait=2.0, stats_path=str(stats))
    assert sorted(_concurrently(batcher, [1, 2, 3, 4])) == [10, 20, 30, 40]
    assert len(shapes) == 1 and sorted(shapes[0]) == [1, 2, 3, 4]
    # Three at once: still 4 rows, the free one a copy of the first; each gets its own row back.
    assert sorted(_concurrently(batcher, [5, 6, 7])) == [50, 60, 70]
    assert len(shapes[1]) == 4 and sorted(shapes[1][:3]) == [5, 6, 7] and shapes[1][3] == shapes[1][0]
    written = read_stats(stats)
    assert {k: written[k] for k in ("size", "calls")} == {"size": 4, "calls": {"3": 1, "4": 1}}
    assert written["seconds"] == pytest.approx(batcher.seconds, abs=1e-3) and written["seconds"] >= 0


def test_a_caller_that_has_its_row_finds_its_call_already_counted(tmp_path):
    """The stats file is written before the waiters return (a slow disk must not let a reader miss the last call)."""

    class SlowDisk(ChunkBatcher):
        def _write_stats(self):
            time.sleep(0.3)
            super()._write_stats()

    stats = tmp_path / "model.batches.json"
    batcher = SlowDisk(lambda rows: rows, size=2, max_wait=0.0, stats_path=str(stats))
    assert batcher.submit("a") == "a"
    assert read_stats(stats)["calls"] == {"1": 1}


def test_a_lone_request_waits_at_most_the_wait_and_a_failure_reaches_every_waiter():
    calls = []

    def compute(rows):
        calls.append(len(rows))
        if rows[0] == "bad":
            raise RuntimeError("forward failed")
        return rows

    batcher = ChunkBatcher(compute, size=8, max_wait=0.05)
    t0 = time.monotonic()
    assert batcher.submit("a") == "a"
    assert time.monotonic() - t0 < 1.0 and calls == [8] and dict(batcher.seen) == {1: 1}
    with pytest.raises(RuntimeError, match="forward failed"):
        batcher.submit("bad")
    assert batcher.submit("b") == "b"  # the batcher goes on serving
    with pytest.raises(ValueError):
        ChunkBatcher(compute, size=0, max_wait=0.0)


def test_only_row_independent_types_batch():
    class Config:
        temporal_ensemble_coeff = None

    assert batchable("act", Config())
    Config.temporal_ensemble_coeff = 0.01  # a running average inside the policy
    assert not batchable("act", Config())
    assert not any(batchable(t, Config()) for t in ("diffusion", "vqbet", "tdmpc", "pi0"))
    assert batchable("smolvla", Config())  # its prompt length and noise are fixed per row when batched


def test_a_batched_smolvla_needs_its_prompt_tokenized_to_the_fixed_length():
    """Batched SmolVLA is refused, with what was found, unless its preprocessor's one tokenizer step pads every
    prompt to ``tokenizer_max_length`` with truncation (a step saved under another name keeps "longest")."""
    from dataclasses import dataclass
    from types import SimpleNamespace

    from evaluations.prebuilt.lerobot.policy import _check_fixed_prompt

    @dataclass
    class TokenizerProcessorStep:  # lerobot's step, by its class name
        padding: str = "max_length"
        truncation: bool = True
        max_length: int = 48

    config = SimpleNamespace(tokenizer_max_length=48)
    _check_fixed_prompt(SimpleNamespace(steps=[object(), TokenizerProcessorStep()]), config)
    for steps in ([TokenizerProcessorStep(padding="longest")], [TokenizerProcessorStep(truncation=False)],
                  [TokenizerProcessorStep(max_length=512)], [], [TokenizerProcessorStep()] * 2):
        with pytest.raises(ValueError, match="cannot batch this SmolVLA checkpoint"):
            _check_fixed_prompt(SimpleNamespace(steps=steps), config)


def test_a_server_read_by_many_shards_counts_once_at_its_fullest():
    a1 = {"server": "a", "size": 4, "calls": {"1": 3, "4": 1}, "seconds": 0.4}
    a2 = {"server": "a", "size": 4, "calls": {"1": 5, "4": 2, "2": 1}, "seconds": 0.8}
    b = {"server": "b", "size": 4, "calls": {"4": 2}, "seconds": 0.2}
    merged = model_batches([[a1], [a2, b], []])
    assert merged["calls"] == {"1": 5, "2": 1, "4": 4} and merged["size"] == 4
    assert merged["meanRows"] == pytest.approx((5 + 2 + 16) / 10)
    assert merged["meanPassMs"] == pytest.approx(1000 * (0.8 + 0.2) / 10)
    assert model_batches([[{**b, "seconds": 0.0}]])["meanPassMs"] is None  # a server that did not time its passes
    assert model_batches([[], []]) is None


def test_one_model_run_one_way_shares_a_server_within_an_evaluation():
    spec = ServerSpec("model", "python+lerobot://x:Y", {"folder": "tiny-act", "batch": 4})
    assert model_key(1, spec) == model_key(1, ServerSpec("model", "python+lerobot://x:Y", {"batch": 4, "folder": "tiny-act"}))
    assert model_key(1, spec) != model_key(2, spec)
    assert model_key(1, spec) != model_key(1, ServerSpec("model", spec.source, {"folder": "tiny-act", "batch": 8}))
    assert model_key(1, spec) != model_key(1, ServerSpec("model", spec.source, spec.kwargs, secrets={"K": "1"}))


@pytest.mark.django_db
def test_the_batch_shape_and_threads_are_recorded_on_a_torch_workload_and_nowhere_else(tenant_a, settings, tmp_path):
    from evaluations.prebuilt.lerobot.entry import LEROBOT_SOURCE
    from evaluations.prebuilt.lerobot.smolvla import SMOLVLA_SOURCE
    from evaluations.services.image_versions import ResolvedImage

    class Version:
        lerobot, checkpoints, source = None, {"tiny-act": {"load": {"folder": "tiny-act"}}}, LEROBOT_SOURCE
        describe = {"corners": ["predict"]}

    settings.RLMESH_MODEL_BATCH, settings.RLMESH_MODEL_BATCH_WAIT_MS, settings.RLMESH_MODEL_THREADS = 4, 20.0, 3
    assert ResolvedImage("prebuilt/lerobot/tiny-act", Version, "tiny-act").load_kwargs == {
        "folder": "tiny-act", "threads": 3, "batch": 4, "batch_wait_ms": 20.0}
    Version.lerobot = {"sha256": "ab" * 32}  # an organization's model car
    assert ResolvedImage("acme/car", Version, None).load_kwargs == {
        "sha256": "ab" * 32, "threads": 3, "batch": 4, "batch_wait_ms": 20.0}
    Version.lerobot, Version.source = None, "python://evaluations.prebuilt.models:Other"
    assert ResolvedImage("prebuilt/other/x", Version, "tiny-act").load_kwargs == {"folder": "tiny-act"}
    Version.source = SMOLVLA_SOURCE  # SmolVLA: threads fix its bits too; it is served one call at a time
    assert ResolvedImage("prebuilt/smolvla/libero", Version, "tiny-act").load_kwargs == {"folder": "tiny-act",
                                                                                         "threads": 3}
    settings.RLMESH_MODEL_BATCH, settings.RLMESH_MODEL_THREADS = 0, 1  # the defaults
    Version.source = LEROBOT_SOURCE
    assert ResolvedImage("prebuilt/lerobot/tiny-act", Version, "tiny-act").load_kwargs == {"folder": "tiny-act",
                                                                                           "threads": 1}


def test_torch_threads_fix_the_bits_of_a_product_and_the_loaders_pin_them(monkeypatch):
    """Why ``threads`` is recorded: on a CPU the same product can differ in its last bits with the thread count
    (seen on the tiny ACT: 1 vs 2 threads, different actions); the loaders pin what they are given."""
    from evaluations.prebuilt.lerobot.smolvla import pin_threads

    calls = []

    class Torch:
        set_num_threads = staticmethod(calls.append)

    pin_threads(Torch, 2)
    pin_threads(Torch, 0)  # 0: torch's default, untouched
    assert calls == [2]


@pytest.fixture(scope="module")
def tiny_act(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    built = subprocess.run([str(LEROBOT_PYTHON), "tests/fixtures/build_tiny_lerobot.py", str(root), "act"], cwd=ROOT,
                           capture_output=True, text=True, timeout=900,
                           env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(root)})
    assert built.returncode == 0, built.stderr[-3000:]
    return root / "tiny-act"


def _drive(folder, batch: int, mode: str, episodes: int = 4, steps: int = 12, env: dict | None = None) -> dict:
    out = subprocess.run([str(LEROBOT_PYTHON), "tests/support/batched_lerobot.py", str(folder), str(batch),
                          str(episodes), str(steps), mode], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(folder.parent), **(env or {})})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_lerobot_venv
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_an_episode_gets_the_same_actions_alone_or_batched_with_others(tiny_act):
    """Four episodes of 12 steps (chunks of 5: 3 chunks each) on a tiny ACT: one after the other (every forward
    pass one real row of 4) and at once (passes of 4 real rows): the same actions, bit for bit. At batch 1 the
    batched path gives what the policy's own ``select_action`` gives; batch 4's bits differ from batch 1's (the
    shape is part of the episode, hence recorded)."""
    alone, together = _drive(tiny_act, 4, "serial"), _drive(tiny_act, 4, "concurrent")
    assert alone["episodes"] == together["episodes"]
    assert alone["batches"] == {"1": 12} and together["batches"].get("4", 0) >= 1
    assert len(set(alone["episodes"].values())) == 4  # four different episodes, not one repeated
    unbatched, batch1 = _drive(tiny_act, 0, "serial"), _drive(tiny_act, 1, "serial")
    assert unbatched["episodes"] == batch1["episodes"] and unbatched["batches"] is None
    assert batch1["episodes"] != alone["episodes"]


def _start_hub(folder, settings, tmp_path, key: str):
    """The host's inference process for the checkpoint ``folder`` at batch 4 (200 ms wait, 1 thread), started by
    the local runtime as a shard would, with ``key`` as its secret."""
    from evaluations.prebuilt.lerobot.entry import LEROBOT_SOURCE
    from evaluations.prebuilt.lerobot.inference import KEY_ENV
    from evaluations.runtime.local import LocalRuntime

    settings.RLMESH_RUN_DIR = str(tmp_path)
    settings.RLMESH_PYTHON_ENVS = {**settings.RLMESH_PYTHON_ENVS, "lerobot": str(LEROBOT_PYTHON)}
    kwargs = {"folder": folder.name, "root": str(folder.parent), "batch": 4, "batch_wait_ms": 200.0, "threads": 1}
    return LocalRuntime().start(ServerSpec("inference", LEROBOT_SOURCE, kwargs, secrets={KEY_ENV: key}), name="hub")


@needs_lerobot_venv
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_separate_thin_servers_meet_in_the_hosts_inference_process(tiny_act, settings, tmp_path):
    """The host's inference process (one copy of the weights) answers thin servers that each hold a connection of
    their own, as each shard's does: four episodes at once share forward passes (passes of more than one real row),
    and every episode gets the actions it gets alone, bit for bit, and the ones the in-process batcher gives at the
    same shape. A thin server asked with a wrong key is refused and the process goes on serving."""
    from evaluations.prebuilt.lerobot.inference import KEY_ENV

    hub = _start_hub(tiny_act, settings, tmp_path, "k" * 32)
    try:
        env = {"RLMESH_INFERENCE_ADDRESS": hub.address, KEY_ENV: "k" * 32}
        together = _drive(tiny_act, 4, "remote-concurrent", env=env)
        seen_together = hub.batch_stats()["calls"]
        alone = _drive(tiny_act, 4, "remote-serial", env=env)
        refused = subprocess.run([str(LEROBOT_PYTHON), "tests/support/batched_lerobot.py", str(tiny_act), "4", "1",
                                  "1", "remote-serial"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                                 env={"PATH": "/usr/bin:/bin", **env, KEY_ENV: "wrong"})
        assert hub.alive() and _drive(tiny_act, 4, "remote-serial", 1, 1, env=env)["episodes"]["0"]
    finally:
        hub.stop()
    assert alone["episodes"] == together["episodes"], (alone, together)
    assert alone["episodes"] == _drive(tiny_act, 4, "serial")["episodes"]
    assert len(set(alone["episodes"].values())) == 4
    assert max(int(rows) for rows in seen_together) > 1, seen_together  # episodes of separate servers met
    assert refused.returncode != 0 and "inference process" in refused.stderr


@pytest.fixture(scope="module")
def tiny_smolvla(tmp_path_factory):
    """A random SmolVLA checkpoint and its backbone folder, built offline (tests/fixtures/build_tiny_smolvla.py):
    ``(policy folder, backbone folder)``."""
    root = tmp_path_factory.mktemp("smolvla")
    built = subprocess.run([str(LEROBOT_PYTHON), "tests/fixtures/build_tiny_smolvla.py", str(root)], cwd=ROOT,
                           capture_output=True, text=True, timeout=900,
                           env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(root)})
    assert built.returncode == 0, built.stderr[-3000:]
    return root / "policy", root / "backbone"


@needs_lerobot_venv
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_smolvla_row_keeps_its_own_prompt_and_noise_in_a_batch(tiny_smolvla, settings, tmp_path, monkeypatch):
    """SmolVLA batched at 4: four episodes whose prompts have three lengths, 60 steps (chunks of 50: two each),
    one after the other and at once, in one process and through the host's inference process from four thin
    servers: the same actions, bit for bit, in all four ways. Without the fixed prompt length the rows do not stack
    (the checkpoint pads to the longest prompt); without each row's own noise the batch shares one draw and the
    episodes change with their neighbours (both measured when this was built)."""
    from evaluations.prebuilt.lerobot.inference import KEY_ENV

    policy, backbone = tiny_smolvla
    monkeypatch.setenv("RLMESH_SMOLVLA_BACKBONE_DIR", str(backbone))  # the inference process inherits it
    env = {"RLMESH_SMOLVLA_BACKBONE_DIR": str(backbone)}
    alone, together = (_drive(policy, 4, mode, steps=60, env=env) for mode in ("serial", "concurrent"))
    assert alone["episodes"] == together["episodes"] and len(set(alone["episodes"].values())) == 4
    assert alone["batches"] == {"1": 8} and together["batches"].get("4", 0) >= 1
    hub = _start_hub(policy, settings, tmp_path, "s" * 32)
    try:
        remote = _drive(policy, 4, "remote-concurrent", steps=60,
                        env={**env, "RLMESH_INFERENCE_ADDRESS": hub.address, KEY_ENV: "s" * 32})
        seen = hub.batch_stats()["calls"]
    finally:
        hub.stop()
    assert remote["episodes"] == alone["episodes"], (remote, alone)
    assert max(int(rows) for rows in seen) > 1, seen


@needs_lerobot_venv
@needs_libero_venv
@pytest.mark.slow
@pytest.mark.live
@pytest.mark.django_db
@pytest.mark.timeout(1800)
def test_workers_1_and_4_give_the_same_libero_episodes_through_the_platform(tenant_a, api, settings, tiny_act,
                                                                            monkeypatch):
    """``RLMESH_MODEL_BATCH=4``: a tiny ACT on LIBERO, 4 episodes on 1 worker and on 4: the same trajectory digests;
    the batch shape is on the workload, the batch sizes the servers saw are in the evaluation's metrics, and each
    model server started is counted in the host memory ledger, once, at its estimate."""
    from evaluations.reports.scores import evaluation_metrics
    from evaluations.services.image_versions import sync_prebuilt

    from evaluations.prebuilt.lerobot.checkpoints import resident_bytes
    from evaluations.runtime.memory import HostMemoryLedger

    settings.RLMESH_LEROBOT_CHECKPOINTS = str(tiny_act.parent)
    settings.RLMESH_MODEL_BATCH = 4
    settings.RLMESH_HOST_MEMORY_LEDGER = str(tiny_act.parent / "ledger.json")
    sync_prebuilt()
    recorded = []
    original = HostMemoryLedger.record
    monkeypatch.setattr(HostMemoryLedger, "record",
                        lambda self, nbytes, what, pid: recorded.append((nbytes, what)) or original(self, nbytes, what, pid))
    task = {"env": "prebuilt/libero", "taskId": "libero_object/9", "episodes": 4, "seed": 0, "maxSteps": 12}
    runs = []
    for workers in (1, 4):
        evaluation = create(tenant_a, {"models": ["prebuilt/lerobot/tiny-act"], "tasks": [{**task, "workers": workers}]})
        run_all(evaluation)
        assert evaluation.status == "completed", evaluation.error_message
        eps = episodes(evaluation)
        assert [e.status for e in eps] == ["completed"] * 4 and eps[0].workload.model_kwargs["batch"] == 4
        metrics = evaluation_metrics(evaluation)
        listed = api.get(f"/v1/evaluations/{evaluation.public_id}/episodes").json()["items"]
        assert {e["modelBatch"] for e in listed} == {4}  # what fixed the bits, on every episode
        runs.append(([e.trajectory_digest for e in eps], metrics["modelBatches"]))
        assert len(recorded) == metrics["serverStartSeconds"]["model"]["n"]  # one entry per server started
        assert set(recorded) == {(resident_bytes(tiny_act), "model prebuilt/lerobot/tiny-act")}
        recorded.clear()
    (one, one_batches), (four, four_batches) = runs
    assert one == four and len(set(one)) == 4
    # 12 steps, chunks of 5: 3 forward passes an episode, plus the first-action checks' calls before episode 1;
    # every one of the fixed shape (shards one after another here: one real row each).
    assert one_batches["size"] == four_batches["size"] == 4
    assert set(one_batches["calls"]) == set(four_batches["calls"]) == {"1"}
    assert min(sum(one_batches["calls"].values()), sum(four_batches["calls"].values())) >= 12
    print("BATCHED", one, one_batches, four_batches)


@needs_lerobot_venv
@needs_libero_venv
@pytest.mark.slow
@pytest.mark.live
@pytest.mark.timeout(1800)
def test_two_worker_processes_on_postgres_and_redis_share_the_hosts_inference_process(tiny_act, tmp_path):
    """The scaled-out setup (PostgreSQL, Redis, two Celery worker processes of concurrency 2 on one host), submitted
    with the official CLI, ``RLMESH_MODEL_BATCH=4``: the 4 shards of ``workers: 4`` are claimed by both worker
    processes and lease one inference process between them (its file registry is the host's, not a worker's); the
    trajectory digests equal those of ``workers: 1``; every pass has the recorded shape."""
    import psycopg

    from tests.support.services import scaled_platform, services_available

    problem = services_available()
    if problem:
        pytest.fail(problem)
    task = {"env": "prebuilt/libero", "taskId": "libero_object/9", "episodes": 4, "seed": 0, "maxSteps": 12}
    with scaled_platform(tmp_path, (None, None), concurrency=2, RLMESH_LEROBOT_CHECKPOINTS=str(tiny_act.parent),
                         RLMESH_MODEL_BATCH="4") as platform:
        runs = {}
        for workers in (1, 4):
            body = {"name": f"batched w{workers}", "models": ["prebuilt/lerobot/tiny-act"],
                    "tasks": [{**task, "workers": workers}]}
            submitted = platform.cli("eval", "submit", "-", "--json", stdin=json.dumps(body))
            assert submitted.returncode == 0, submitted.stderr
            eval_id = json.JSONDecoder().raw_decode(submitted.stdout)[0]["id"]
            final = wait_for(lambda: (e := platform.api(f"/v1/evaluations/{eval_id}"))["status"]
                             in ("completed", "failed", "cancelled") and e, timeout=900, interval=1)
            assert final["status"] == "completed", final
            items = sorted(platform.episodes(eval_id), key=lambda i: i["index"])
            assert [i["status"] for i in items] == ["completed"] * 4 and {i["modelBatch"] for i in items} == {4}
            with psycopg.connect(platform.postgres.url) as db:
                claimed = {row[0] for row in db.execute(
                    "select s.claimed_by from evaluations_shard s join evaluations_evaluation e "
                    "on e.id = s.evaluation_id where e.public_id = %s", [eval_id])}
            # A shard is claimed as host:pid of a pool process; its parent is the Celery worker that runs the pool.
            parents = {int(Path(f"/proc/{c.rsplit(':', 1)[1]}/stat").read_text().rsplit(")", 1)[1].split()[1])
                       for c in claimed}
            workers_of = {platform.procs[name].pid: name for name in ("worker1", "worker2")}
            claimed = {workers_of.get(pid, pid) for pid in parents}
            hubs = sorted((platform.var / "run").glob(f"{eval_id}-*-model-inference-*.log"))
            batches = platform.api(f"/v1/evaluations/{eval_id}/metrics")["modelBatches"]
            runs[workers] = ([i["trajectoryDigest"] for i in items], claimed, hubs, batches)
    (one, _, one_hubs, one_batches), (four, claimed, four_hubs, four_batches) = runs[1], runs[4]
    assert claimed == {"worker1", "worker2"}, claimed  # both Celery workers ran shards
    assert len(one_hubs) == len(four_hubs) == 1, (one_hubs, four_hubs)  # one inference process each evaluation
    assert one == four and len(set(one)) == 4
    assert one_batches["size"] == four_batches["size"] == 4
    assert sum(int(rows) * n for rows, n in four_batches["calls"].items()) >= 12  # 3 chunks an episode, at least


@pytest.mark.timeout(120)
def test_rlmesh_model_servers_run_one_sessions_predict_at_a_time(tmp_path):
    """Why batching through the platform sees one row per pass (docs/running/scaling.md): rlmesh 0.1.0's model
    server runs the predicts of two concurrent sessions one after the other, and never fuses them into the
    ``predict_batch`` the model declares. When this fails, rlmesh overlaps or fuses them: measure again."""
    import os
    import socket
    import sys

    import rlmesh

    from tests.support.live import free_port

    log = tmp_path / "calls.jsonl"
    log.touch()
    env = {**os.environ, "SLOW_MODEL_LOG": str(log), "PYTHONPATH": str(ROOT)}
    model_port, env_ports = free_port(), [free_port(), free_port()]
    procs = [subprocess.Popen([sys.executable, "-m", "rlmesh.serve", "tests.support.slow_model:SlowModel", "--address",
                               f"127.0.0.1:{model_port}"], env=env, cwd=ROOT)]
    procs += [subprocess.Popen([sys.executable, "-c", "import gymnasium as gym, rlmesh; rlmesh.EnvServer("
                                f"gym.make('CartPole-v1'), '127.0.0.1:{p}').serve()"], env=env, cwd=ROOT)
              for p in env_ports]
    try:
        deadline = time.monotonic() + 60
        for port in (model_port, *env_ports):  # rlmesh.serve binds once the model is loaded
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"a server on {port} did not start"
                    time.sleep(0.3)
        sessions = [threading.Thread(target=rlmesh.run, args=(rlmesh.RemoteModel(f"127.0.0.1:{model_port}"),
                                                              f"127.0.0.1:{p}"), kwargs={"seeds": [0], "max_episode_steps": 5})
                    for p in env_ports]
        for t in sessions:
            t.start()
        for t in sessions:
            t.join(60)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    spans = {}  # each session's episode: (its first call's start, its last call's end)
    for episode, start, end, *_ in calls:
        first, last = spans.get(episode, (start, end))
        spans[episode] = (min(first, start), max(last, end))
    assert len(calls) >= 10 and len(spans) == 2, calls  # both sessions' calls (rlmesh may serve both on one thread)
    (a0, a1), (b0, b1) = spans.values()
    assert a0 < b1 and b0 < a1, spans  # the sessions ran at the same time: what follows says something
    assert not [(a, b) for a in calls for b in calls if a is not b and a[1] < b[2] and b[1] < a[2]]  # none overlap
    # Nor are they fused: the model declares predict_batch, and every call is still one session's predict
    # (docs/running/scaling.md: why an rlmesh image's batched corners are not batched across shards).
    assert all(len(c) == 3 for c in calls)
