"""An rlmesh model's own batched corner, batched across episodes (issue 36; ``evaluations.prebuilt.fused``): the
host's inference process calls ``predict_batch`` with rows of several episodes, each with its own context (seed,
predict count, state), and every episode gets the actions it gets alone; through the platform the batch shape is
recorded on the workload and ``workers: 1`` and ``workers: 4`` give the same trajectories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from evaluations.prebuilt import fused
from evaluations.runtime import ServerSpec
from tests.support.execution import create, episodes, run_all
from tests.support.libero import ROOT
from tests.support.live import free_port, wait_for

FUSED = "python://tests.support.fused_model:FusedPolicy"
UNFUSABLE = "python://tests.support.fused_model:UnfusablePolicy"


def _log(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_rows_of_several_episodes_keep_their_own_context_in_one_pass(tmp_path, monkeypatch):
    """In one process: three episodes' rows at once, in passes of the fixed shape, give each episode the actions it
    gets alone; the free rows carry no episode (no episode's predict count or state moves), and an episode's end
    reaches the model's own hook."""
    import numpy as np

    from tests.support.fused_model import FusedPolicy

    monkeypatch.setenv("FUSED_MODEL_LOG", str(tmp_path / "log.jsonl"))
    obs = [np.array([0.01 * i, -0.02, 0.03 * i, 0.1], dtype=np.float32) for i in range(3)]

    def run(model, concurrently: bool) -> dict:
        actions: dict = {}

        def episode(i):
            context = {"episode_id": f"e{i}-{concurrently}", "episode_seed": 7 + i}
            actions[i] = [int(model.predict(obs[i] + 0.001 * step, context)) for step in range(5)]
            model.end(context["episode_id"])

        threads = [threading.Thread(target=episode, args=(i,)) for i in range(3)]
        for t in threads if concurrently else []:
            t.start()
        for t in threads:
            if not concurrently:
                t.start()
            t.join(30)
        return actions

    batched = fused.FusedModel(fused.load("tests.support.fused_model:FusedPolicy", {}), batch=4, max_wait=0.3)
    alone = run(batched, concurrently=False)
    together = run(batched, concurrently=True)
    assert alone == together and len({tuple(a) for a in alone.values()}) > 1
    log = _log(tmp_path / "log.jsonl")
    passes = [r for r in log if "rows" in r]
    assert {r["rows"] for r in passes} == {4}  # the fixed shape, always
    assert max(len(r["episodes"]) for r in passes) > 1  # episodes met in a pass
    assert sum(len(r["episodes"]) for r in passes) == 2 * 3 * 5  # each real row counted once: free rows are nobody's
    assert sorted(r["end"] for r in log if "end" in r) == sorted(f"e{i}-{c}" for i in range(3) for c in (False, True))
    assert len(batched.model._episodes) == 0  # every episode's state dropped at its end
    # Alone at batch 1 (a pass of one row, no free rows): the model's state per episode gives the same actions too.
    single = fused.FusedModel(FusedPolicy(), batch=1, max_wait=0.0)
    assert run(single, concurrently=False) == alone


def test_a_model_that_forbids_fusion_is_served_one_call_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSED_MODEL_LOG", str(tmp_path / "log.jsonl"))
    model = fused.FusedModel(fused.load("tests.support.fused_model:UnfusablePolicy", {"hidden": 8,
                             fused.BATCH_KWARG: 4, fused.WAIT_KWARG: 50.0}), batch=4, max_wait=0.05)
    assert model.unbatched == "the model sets allow_fusion = False" and model.batcher.size == 1
    import numpy as np

    model.predict(np.zeros(4, dtype=np.float32), {"episode_id": "a", "episode_seed": 0})
    assert [r["rows"] for r in _log(tmp_path / "log.jsonl")] == [1]


def test_only_models_that_declare_a_batched_corner_record_a_batch_shape(settings):
    import rlmesh

    from evaluations.models import ImageRepository, ImageVersion
    from evaluations.services.image_versions import fused_kwargs, recorded_batch

    settings.RLMESH_MODEL_BATCH = 4
    repo = ImageRepository(namespace="a", name="m", kind="model")
    batched = ImageVersion(repository=repo, source=FUSED, describe={"corners": ["predict", "predict_batch"]})
    assert fused_kwargs(batched) == {fused.BATCH_KWARG: 4, fused.WAIT_KWARG: settings.RLMESH_MODEL_BATCH_WAIT_MS}
    assert recorded_batch(fused_kwargs(batched)) == 4
    assert fused_kwargs(ImageVersion(repository=repo, source=FUSED, describe={"corners": ["predict"]})) == {}
    image = "oci://r/x@sha256:" + "0" * 64
    assert fused_kwargs(ImageVersion(repository=repo, source=image, describe={"corners": ["predict_batch"]})) == {}
    named = {"corners": ["predict_batch"], "target": {"qualname": "pkg.models:Policy"},
             "runtime": {"package_version": rlmesh.__version__}}
    assert fused_kwargs(ImageVersion(repository=repo, source=image, describe=named))[fused.TARGET_KWARG] == \
        "pkg.models:Policy"  # an image names its model's class
    other = {**named, "runtime": {"package_version": "0.2.0"}}  # the platform's part runs on the image's rlmesh
    assert fused_kwargs(ImageVersion(repository=repo, source=image, describe=other)) == {}
    assert fused_kwargs(ImageVersion(repository=repo, source=image, lerobot={"sha256": "ab" * 32},
                                     describe=named)) == {}  # a model car: LeRobot's
    settings.RLMESH_MODEL_BATCH = 0
    assert fused_kwargs(batched) == {}


def _version(namespace: str, source: str) -> str:
    import rlmesh

    from evaluations.models import ImageRepository, ImageVersion
    from evaluations.prebuilt.fused import _target

    repo = ImageRepository.objects.create(namespace=namespace, name="fused", kind="model")
    repo.current_version = ImageVersion.objects.create(
        repository=repo, digest="sha256:" + "2" * 64, tags=["latest"], source=source,
        describe=rlmesh.describe(_target(source.partition("://")[2])))
    repo.save()
    return f"{namespace}/fused"


@pytest.mark.timeout(300)
def test_workers_1_and_4_give_the_same_episodes_through_the_platform(tenant_a, api, settings, tmp_path, monkeypatch):
    """``RLMESH_MODEL_BATCH=4`` on SQLite, shards run one after another: what the platform routes and records. The
    batch shape is on the workload and every episode, the model runs in the host's inference process behind a thin
    server per shard (every pass of the recorded shape), and 1 and 4 workers give the same digests; the model saw
    each episode's end. Episodes meeting in a pass: the thin-servers test and the PostgreSQL + Redis test."""
    from evaluations.reports.scores import evaluation_metrics

    settings.RLMESH_MODEL_BATCH = 4
    settings.RLMESH_RUN_DIR = str(tmp_path / "run")
    monkeypatch.setenv("FUSED_MODEL_LOG", str(tmp_path / "log.jsonl"))
    ref = _version("a", FUSED)
    task = {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 4, "seed": 3, "maxSteps": 40}
    runs = []
    for workers in (1, 4):
        evaluation = create(tenant_a, {"models": [ref], "tasks": [{**task, "workers": workers}]})
        run_all(evaluation)
        assert evaluation.status == "completed", evaluation.error_message
        eps = episodes(evaluation)
        assert [e.status for e in eps] == ["completed"] * 4
        assert eps[0].workload.model_kwargs[fused.BATCH_KWARG] == 4
        listed = api.get(f"/v1/evaluations/{evaluation.public_id}/episodes").json()["items"]
        assert {e["modelBatch"] for e in listed} == {4}
        batches = evaluation_metrics(evaluation)["modelBatches"]
        assert batches["size"] == 4 and set(batches["calls"]) == {"1"}  # shards one after another here
        runs.append([e.trajectory_digest for e in eps])
    assert runs[0] == runs[1] and len(set(runs[0])) == 4
    log = _log(tmp_path / "log.jsonl")
    assert {r["rows"] for r in log if "rows" in r} == {4}
    assert len([r for r in log if "end" in r]) >= 8  # each episode's end reached the model (and the first-action check's)
    hubs = list((tmp_path / "run").glob("*-inference-*.log"))
    assert len(hubs) >= 2, hubs  # the model ran in inference processes (one per evaluation at least)


@pytest.mark.timeout(300)
def test_separate_thin_servers_meet_in_one_pass_and_keep_their_episodes(settings, tmp_path):
    """As on a host with four shards: the inference process started by the local runtime, four thin servers, four
    CartPole env servers, four ``rlmesh.run`` sessions at once and then one after another: passes with rows of more
    than one episode, and the same trajectory digest per seed both ways."""
    import rlmesh

    from evaluations.domain.trajectory import TrajectoryDigest
    from evaluations.prebuilt.lerobot.inference import KEY_ENV
    from evaluations.runtime.inference import _thin_spec
    from evaluations.runtime.local import LocalRuntime

    settings.RLMESH_RUN_DIR = str(tmp_path)
    key = "f" * 32
    log = tmp_path / "log.jsonl"
    os.environ["FUSED_MODEL_LOG"] = str(log)
    servers, envs = [], []
    try:
        hub = LocalRuntime().start(ServerSpec("inference", FUSED, {fused.BATCH_KWARG: 4, fused.WAIT_KWARG: 300.0},
                                              secrets={KEY_ENV: key}), name="hub")
        servers.append(hub)
        thins = [LocalRuntime().start(_thin_spec(ServerSpec("model", FUSED), hub.address, {KEY_ENV: key}),
                                      name=f"thin{i}") for i in range(4)]
        servers += thins
        ports = [free_port() for _ in range(4)]
        envs = [subprocess.Popen([sys.executable, "-c", "import gymnasium as gym, rlmesh; rlmesh.EnvServer("
                                  f"gym.make('CartPole-v1'), '127.0.0.1:{p}').serve()"], cwd=ROOT) for p in ports]
        for p in ports:
            wait_for(lambda p=p: _accepts(p), timeout=60)

        def episode(i, digests):
            class Hooks(rlmesh.RunHooks):
                def __init__(self):
                    super().__init__()
                    self.digest = TrajectoryDigest()

                def on_step(self, event):
                    self.digest.step(event.observation, event.action, event.reward, event.terminated, event.truncated)

            hooks = Hooks()
            rlmesh.run(rlmesh.RemoteModel(thins[i].address), f"127.0.0.1:{ports[i]}", seeds=[10 + i],
                       max_episode_steps=40, hooks=hooks)
            digests[i] = hooks.digest.hexdigest()

        together: dict = {}
        threads = [threading.Thread(target=episode, args=(i, together)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        met = [r for r in _log(log) if len(r.get("episodes", ())) > 1]
        alone: dict = {}
        for i in range(4):
            episode(i, alone)
        stats = hub.batch_stats()
        # The same model served by rlmesh.serve itself (one row a call): a consistent mistake of the batched path
        # (a predict_index off by one, a lost state) would give other episodes than rlmesh's own.
        plain = LocalRuntime().start(ServerSpec("model", FUSED), name="plain")
        servers.append(plain)
        thins = [plain] * 4
        served: dict = {}
        for i in range(4):
            episode(i, served)
    finally:
        os.environ.pop("FUSED_MODEL_LOG", None)
        for s in servers:
            s.stop()
        for p in envs:
            p.kill()
            p.wait()
    assert together == alone and len(together) == 4 and len(set(together.values())) == 4
    assert served == alone  # this model's rows are the same bits in a pass of 1 and of 4
    assert met, "no pass held rows of two episodes"
    assert stats["size"] == 4 and max(int(k) for k in stats["calls"]) > 1, stats
    records = _log(log)
    ends = [r["end"] for r in records if "end" in r]
    assert sorted(ends) == sorted({e for r in records for e in r.get("episodes", ())}), ends  # each ended once


def _accepts(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


@pytest.mark.live
@pytest.mark.timeout(900)
def test_two_worker_processes_on_postgres_and_redis_batch_one_models_episodes(tmp_path):
    """The scaled-out setup (PostgreSQL, Redis, two Celery worker processes of concurrency 2 on one host), submitted
    with the official CLI, ``RLMESH_MODEL_BATCH=4``: the 4 shards of ``workers: 4`` share one inference process of
    the rlmesh model, whose passes hold rows of several episodes; the digests equal those of ``workers: 1``."""
    from tests.support.services import scaled_platform, services_available

    problem = services_available()
    if problem:
        pytest.fail(problem)
    log = tmp_path / "log.jsonl"
    task = {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 8, "seed": 5,
            "maxSteps": 60}
    with scaled_platform(tmp_path, (None, None), concurrency=2, RLMESH_MODEL_BATCH="4",
                         RLMESH_MODEL_BATCH_WAIT_MS="100", FUSED_MODEL_LOG=str(log)) as platform:
        platform.manage("shell", "-c", (
            "import rlmesh; from evaluations.models import ImageRepository, ImageVersion; "
            "from tests.support.fused_model import FusedPolicy; "
            "r = ImageRepository.objects.create(namespace='prebuilt', name='fused-test', kind='model'); "
            "r.current_version = ImageVersion.objects.create(repository=r, digest='sha256:' + '3' * 64, "
            f"tags=['latest'], source='{FUSED}', describe=rlmesh.describe(FusedPolicy)); r.save()"))
        runs = {}
        for workers in (1, 4):
            body = {"name": f"fused w{workers}", "models": ["prebuilt/fused-test"], "tasks": [{**task, "workers": workers}]}
            done = platform.run(body)  # the official CLI's submit, then its end
            eval_id, final, items = done["id"], done["evaluation"], done["items"]
            assert final["status"] == "completed", final
            assert [i["status"] for i in items] == ["completed"] * 8 and {i["modelBatch"] for i in items} == {4}
            batches = done["metrics"]["modelBatches"]
            hubs = sorted((platform.var / "run").glob(f"{eval_id}-*-model-inference-*.log"))
            runs[workers] = ([i["trajectoryDigest"] for i in items], batches, hubs)
    (one, _, _), (four, four_batches, four_hubs) = runs[1], runs[4]
    assert one == four and len(set(one)) == 8
    assert four_batches["size"] == 4 and max(int(rows) for rows in four_batches["calls"]) > 1, four_batches
    assert 1 <= len(four_hubs) <= 2, four_hubs  # one process the shards lease (again only if all had left it)
    assert {r["rows"] for r in _log(log) if "rows" in r} == {4}
    print("FUSED", runs[1][1], four_batches, len(four_hubs))


def test_the_local_runtime_tells_the_two_inference_processes_apart_by_the_lerobot_servers_target():
    from evaluations.prebuilt.lerobot.entry import LEROBOT_SOURCE
    from evaluations.runtime.local import LEROBOT_TARGET

    assert LEROBOT_SOURCE.partition("://")[2] == LEROBOT_TARGET


def test_which_model_servers_go_through_an_inference_process():
    from evaluations.prebuilt.lerobot.entry import LEROBOT_SOURCE
    from evaluations.runtime.inference import batches, unbatched

    shape = {fused.BATCH_KWARG: 4, fused.WAIT_KWARG: 10.0}
    image = "oci://r/ns/m@sha256:" + "0" * 64
    assert batches(ServerSpec("model", FUSED, shape))
    assert batches(ServerSpec("model", image, {**shape, fused.TARGET_KWARG: "pkg.models:Policy"}))
    assert not batches(ServerSpec("model", image, shape))  # an image whose class is unknown
    assert not batches(ServerSpec("model", FUSED, {}))  # no shape recorded: served by rlmesh.serve, one call a time
    assert not batches(ServerSpec("inference", FUSED, shape))
    assert batches(ServerSpec("model", LEROBOT_SOURCE, {"batch": 4})) and not batches(ServerSpec("model", LEROBOT_SOURCE, shape))
    # What rlmesh.serve of the model takes when an image cannot be batched here (a remote engine).
    assert unbatched(ServerSpec("model", image, {**shape, fused.TARGET_KWARG: "p:C", "weights": "w"})).kwargs == \
        {"weights": "w"}


def test_a_pass_waits_for_no_more_rows_than_thin_servers_are_connected(tmp_path, monkeypatch):
    """Two thin servers connected, batch 4, a 30 s wait: their two rows make a pass at once (a pass of 2 real rows),
    instead of each pass waiting the whole 30 s for rows 3 and 4 that no one can send."""

    import numpy as np

    from evaluations.prebuilt.lerobot import inference, remote

    monkeypatch.setenv(remote.KEY_ENV, "k" * 32)
    connections = inference.Connections()  # this listener's own (the process-wide one counts other tests' too)
    model = fused.FusedModel(fused.load("tests.support.fused_model:FusedPolicy", {}), batch=4, max_wait=30.0,
                             peers=connections)
    address = f"unix://{tmp_path}/inference.sock"
    threading.Thread(target=inference.listen, args=(address, fused._responder(model), connections),
                     daemon=True).start()
    wait_for(lambda: (tmp_path / "inference.sock").exists(), timeout=5, interval=0.01)
    clients = [remote.InferenceClient(address) for _ in range(2)]
    assert [c.ping() for c in clients] and connections() == 2  # each holds its connection open
    actions = [None, None]

    def ask(i):
        actions[i] = clients[i].request({"observation": np.full(4, 0.1 * i, dtype=np.float32),
                                         "context": {"episode_id": f"e{i}", "episode_seed": i}})["action"]

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads), "a pass waited for rows no connected thin server could send"
    assert None not in actions and dict(model.batcher.seen) == {2: 1}
    for c in clients:
        c.close()
    wait_for(lambda: connections() == 0, timeout=5, interval=0.05)


def test_a_process_that_goes_away_mid_request_is_named_as_such(tmp_path, monkeypatch):
    """Found by a fresh user: a process ended by SIGTERM mid-request made episodes end with "unreachable: EOFError: "
    and nothing after it."""
    import socket as sockets

    from evaluations.prebuilt.lerobot import remote

    monkeypatch.setenv(remote.KEY_ENV, "k" * 32)
    path = tmp_path / "inference.sock"
    listener = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def serve_once():
        sock, _ = listener.accept()
        conn = remote.handshake(sock, b"k" * 32, server=True)
        conn.recv()
        conn.close()  # gone before it answers

    threading.Thread(target=serve_once, daemon=True).start()
    with pytest.raises(RuntimeError, match="unreachable: EOFError: the connection closed"):
        remote.InferenceClient(f"unix://{path}").request({"observation": 1, "context": {}})
    listener.close()


def test_an_episode_whose_end_never_arrives_is_ended_once_by_its_connection(tmp_path, monkeypatch):
    """A thin server stopped mid-episode never tells its end: the connection's next episode, or its closing, ends it
    in the model (its state dropped), and a late explicit end is not passed on a second time."""
    import numpy as np

    monkeypatch.setenv("FUSED_MODEL_LOG", str(tmp_path / "log.jsonl"))
    model = fused.FusedModel(fused.load("tests.support.fused_model:FusedPolicy", {}), batch=1, max_wait=0.0)
    respond = fused._responder(model)()
    row = {"observation": np.zeros(4, dtype=np.float32)}
    respond({**row, "context": {"episode_id": "a", "episode_seed": 1}})
    respond({**row, "context": {"episode_id": "b", "episode_seed": 2}})  # a's end never came
    respond({"end": "a"})  # late: a was ended already
    assert len(model.model._episodes) == 1  # b's
    respond.closed()  # the thin server went away during b
    assert [r["end"] for r in _log(tmp_path / "log.jsonl") if "end" in r] == ["a", "b"]
    assert len(model.model._episodes) == 0


def test_models_the_process_cannot_batch_are_refused_saying_why():
    import rlmesh

    class Wrapped:  # a policy object rlmesh.serve would wrap
        def predict_batch(self, observations):
            return observations

    with pytest.raises(TypeError, match="cannot be batched across episodes: only a subclass of rlmesh.numpy.Model"):
        fused._framework(Wrapped)
    with pytest.raises(TypeError, match="cannot be batched"):
        fused._framework(type("Raw", (rlmesh.Model,), {"predict_batch": lambda self, o: o}))  # raw rlmesh Values
    assert fused._framework(type("Named", (rlmesh.numpy.Model,), {"__module__": "rlmesh_policies"})) is \
        rlmesh.numpy.Model  # a user's module named like rlmesh is the user's, not a framework


def test_a_model_that_sets_its_spec_in_load_is_refused():
    with pytest.raises(TypeError, match="sets its spec in load"):
        fused.load("tests.support.fused_model:SpecInLoad", {})


def test_each_task_has_its_own_inference_process_and_a_tasks_shards_share_one(tenant_a, settings):
    """Rows of one pass are stacked: another task's observations may have other shapes, keys or dtypes, so an rlmesh
    model batched across episodes gets a process per task (LeRobot's processors give every task one input shape)."""
    from evaluations.models import Shard
    from evaluations.runs.runner import ShardRunner

    settings.RLMESH_MODEL_BATCH = 4
    ref = _version("a", FUSED)
    evaluation = create(tenant_a, {"models": [ref], "tasks": [
        {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 4, "workers": 2},
        {"env": "prebuilt/classic-control", "taskId": "classic/Acrobot-v1", "episodes": 2}]})
    keys = {}
    for shard in Shard.objects.filter(evaluation=evaluation).select_related("workload"):
        runner = ShardRunner(shard)
        keys.setdefault(shard.workload.task_id, set()).add(runner._model_key(runner._spec("model")))
    assert {task: len(k) for task, k in keys.items()} == {"classic/CartPole-v1": 1, "classic/Acrobot-v1": 1}
    assert keys["classic/CartPole-v1"] != keys["classic/Acrobot-v1"]
