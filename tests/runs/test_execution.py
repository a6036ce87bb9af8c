"""Shard execution against real rlmesh servers started by the local runtime (no Celery: tasks run inline)."""

from __future__ import annotations

import os

import pytest
from django.utils import timezone

from evaluations.choices import EvaluationStatus, ShardStatus
from evaluations.models import Episode, Evaluation, ImageRepository, ImageVersion, Shard, WorkerProcess
from evaluations.runs import lifecycle as svc
from evaluations.runs import loop as execution
from evaluations.runs import reaper, workers
from evaluations.planning import plan_evaluation
from evaluations.reports.scores import evaluation_scores
from tests.conftest import CARTPOLE_TASK, cartpole_request
from tests.support.execution import create, episodes, run_all

pytestmark = pytest.mark.django_db


def test_heuristic_cartpole_succeeds_on_every_episode(tenant_a):
    evaluation = create(tenant_a, cartpole_request())
    run_all(evaluation)
    assert evaluation.status == EvaluationStatus.COMPLETED
    eps = episodes(evaluation)
    assert [e.index for e in eps] == [0, 1, 2] and [e.seed for e in eps] == [0, 1, 2]
    for e in eps:
        assert (e.status, e.success, e.success_source, e.steps, e.reward) == ("completed", True, "criterion", 500, 500.0)
        assert (e.truncated, e.terminated, e.stop_condition) == (True, False, "time_limit")
        assert e.predict_ms > 0 and e.step_ms > 0 and sum(e.latency["step"].values()) == 500
    assert evaluation.completed_episodes == 3 and evaluation.errored_episodes == 0
    assert evaluation.logs.filter(message__contains="env server").exists()


def test_random_baseline_is_reproducible_from_the_seed(tenant_a):
    body = cartpole_request(models=["prebuilt/random"])
    body["tasks"][0].update(episodes=4, seed=11)
    first, second = create(tenant_a, body), create(tenant_a, body)
    run_all(first)
    run_all(second)
    a, b = episodes(first), episodes(second)
    assert [(e.seed, e.steps, e.reward) for e in a] == [(e.seed, e.steps, e.reward) for e in b]
    assert not any(e.success for e in a) and all(e.stop_condition == "terminated" for e in a)
    # the trajectory digest says it bit for bit: the same per seed, another for every other seed
    assert [e.trajectory_digest for e in a] == [e.trajectory_digest for e in b]
    assert len({e.trajectory_digest for e in a}) == 4 and all(len(e.trajectory_digest) == 64 for e in a)
    assert all(e.digest_comparable is True for e in a)


def test_sharding_never_changes_which_episodes_run(tenant_a):
    body = cartpole_request(models=["prebuilt/random"])
    body["tasks"][0].update(episodes=4, seed=5)
    whole = create(tenant_a, body)
    body["tasks"][0]["workers"] = 3
    split = create(tenant_a, body)
    assert Shard.objects.filter(evaluation=split).count() == 3
    run_all(whole)
    run_all(split)
    assert [(e.index, e.seed, e.steps) for e in episodes(whole)] == [(e.index, e.seed, e.steps) for e in episodes(split)]
    assert [e.trajectory_digest for e in episodes(whole)] == [e.trajectory_digest for e in episodes(split)]


def test_an_episode_digests_the_same_in_any_order_on_a_fresh_or_used_server_and_on_either_loop(tenant_a):
    """Seeds 3–5 of the CartPole heuristic: in order on one server, in reverse order each on a fresh server, after
    3 other episodes on a used server, and recorded (the session loop, rendering) all give the same digests; a
    60-step cap keeps it quick."""
    task = dict(CARTPOLE_TASK, maxSteps=60)
    body = cartpole_request(tasks=[
        dict(task, seed=3, episodes=3),
        *[dict(task, seed=seed, episodes=1) for seed in (5, 4, 3)],
        dict(task, seed=0, episodes=6),
        dict(task, seed=3, episodes=3, record="all"),
    ])
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    by_workload: dict[int, dict[int, str]] = {}
    for e in episodes(evaluation):
        assert e.status == "completed" and len(e.trajectory_digest) == 64, e.error
        by_workload.setdefault(e.workload.index, {})[e.seed] = e.trajectory_digest
    in_order = by_workload[0]
    assert len(set(in_order.values())) == 3
    assert {**by_workload[1], **by_workload[2], **by_workload[3]} == in_order
    assert {s: d for s, d in by_workload[4].items() if s >= 3} == in_order
    assert by_workload[5] == in_order
    assert all(e.video for e in episodes(evaluation) if e.workload.index == 5)  # it did take the session loop


def test_a_digest_is_not_comparable_when_a_clock_ended_the_episode_or_the_env_runs_in_real_time(tenant_a):
    from evaluations.runs.outcome import completed_fields

    workload = create(tenant_a, cartpole_request()).workloads.get()
    kw = dict(reward=1.0, steps=10, terminated=False, flag=None, workload=workload, digest="a" * 64)
    assert completed_fields({}, truncated=False, wall_s=1.0, wall_cap=60.0, **kw)["digest_comparable"] is True
    ended = completed_fields({}, truncated=True, wall_s=61.0, wall_cap=60.0, **kw)
    assert (ended["stop_condition"], ended["digest_comparable"]) == ("wall_time", False)
    assert completed_fields({}, truncated=False, wall_s=1.0, wall_cap=60.0, **dict(kw, digest=""))[
        "digest_comparable"] is None
    for web_env in ("miniwob", "shop"):
        workload.env_version = ImageRepository.objects.get(namespace="prebuilt", name=web_env).current_version
        fields = completed_fields({}, truncated=False, wall_s=1.0, wall_cap=60.0, **kw)
        assert (fields["trajectory_digest"], fields["digest_comparable"]) == ("a" * 64, False), web_env


def test_a_driver_side_perturbation_changes_the_digest_and_repeats_it(tenant_a):
    task = dict(CARTPOLE_TASK, maxSteps=40, seed=2, episodes=2)
    plain = dict(task)
    noisy = dict(task, perturbation="obs_noise:0.5")
    evaluation = create(tenant_a, cartpole_request(tasks=[plain, noisy, noisy]))
    run_all(evaluation)
    digests = [[e.trajectory_digest for e in episodes(evaluation) if e.workload.index == w] for w in range(3)]
    assert digests[1] == digests[2] and digests[1] != digests[0]


def test_a_redelivered_shard_neither_duplicates_nor_loses_episodes(tenant_a):
    evaluation = create(tenant_a, cartpole_request())
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    execution.run_shard(shard.pk)
    assert execution.run_shard(shard.pk) is None  # a duplicate delivery is not claimed
    # A redelivery after a crash: the shard is queued again with one episode already lost.
    Episode.objects.filter(evaluation=evaluation, index=1).delete()
    kept = {e.index: e.finished_at for e in episodes(evaluation)}
    Shard.objects.filter(pk=shard.pk).update(status=ShardStatus.QUEUED)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=EvaluationStatus.RUNNING, completed_episodes=2)
    assert execution.run_shard(shard.pk) == ShardStatus.COMPLETED
    eps = episodes(evaluation)
    assert [e.index for e in eps] == [0, 1, 2]
    assert {e.index: e.finished_at for e in eps if e.index != 1} == kept
    evaluation.refresh_from_db()
    assert evaluation.completed_episodes == 3 and evaluation.status == EvaluationStatus.COMPLETED


def test_max_steps_caps_episodes(tenant_a):
    body = cartpole_request()
    body["tasks"][0].update(maxSteps=50, episodes=2)
    plan = plan_evaluation(body, organization=tenant_a.org)
    assert any("below the 500 steps" in w for w in plan.warnings)
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    for e in episodes(evaluation):
        # Capped before CartPole's 500-step horizon: it did not survive what the criterion asks.
        assert (e.steps, e.stop_condition, e.truncated, e.success) == (50, "max_steps", True, False)


def _faulty_env(namespace: str, source: str, scenarios=None) -> str:
    repo = ImageRepository.objects.create(namespace=namespace, name="faulty", kind="env")
    repo.current_version = ImageVersion.objects.create(
        repository=repo, digest="sha256:" + "1" * 64, tags=["latest"], source=source, scenarios=scenarios or []
    )
    repo.save()
    return f"{namespace}/faulty"


def test_a_crashed_env_server_errors_one_episode_and_is_restarted(tenant_a):
    ref = _faulty_env("a", "python://tests.support.envs:FaultyCartPole", [
        {"id": "faulty/crash1", "name": "crash on seed 1", "params": {"crash_seed": 1}, "success": {"kind": "survived"}},
    ])
    body = {"models": ["prebuilt/classic-control-heuristics"], "tasks": [{"env": ref, "taskId": "faulty/crash1", "episodes": 3}]}
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    eps = episodes(evaluation)
    assert [e.status for e in eps] == ["completed", "error", "completed"]
    assert eps[1].stop_condition == "error" and "server crashed" in eps[1].error
    assert eps[2].success is True
    # 1 of 3 errored is above the default 10% threshold
    assert evaluation.status == EvaluationStatus.FAILED and "1 of 3 episodes errored" in evaluation.error_message
    assert evaluation.logs.filter(message__contains="episode 1").exists()


def test_a_hung_env_times_out_instead_of_hanging_the_shard(tenant_a, settings):
    settings.RLMESH_REQUEST_TIMEOUT = 2.0
    settings.RLMESH_MAX_ERROR_FRACTION = 0.5
    ref = _faulty_env("a", "python://tests.support.envs:FaultyCartPole", [
        {"id": "faulty/hang0", "name": "hang on seed 0", "params": {"hang_seed": 0}},
    ])
    body = {"models": ["prebuilt/classic-control-heuristics"], "tasks": [{"env": ref, "taskId": "faulty/hang0", "episodes": 2}]}
    evaluation = create(tenant_a, body)
    started = timezone.now()
    run_all(evaluation)
    assert (timezone.now() - started).total_seconds() < 30
    eps = episodes(evaluation)
    assert eps[0].status == "error" and "timed out" in eps[0].error and (eps[0].success, eps[0].reward) == (None, None)
    assert "each env or model call has 2 s" in eps[0].error and "RLMESH_REQUEST_TIMEOUT" in eps[0].error
    skipped = evaluation.logs.get(message__startswith="first-action check skipped").message  # the probe met it first
    assert "each env or model call has 2 s" in skipped
    assert eps[1].status == "completed" and eps[1].success_source == "undefined"  # no flag, no criterion: no guess
    assert evaluation.status == EvaluationStatus.COMPLETED


def test_an_env_that_cannot_start_fails_the_evaluation_quickly(tenant_a):
    ref = _faulty_env("a", "python://tests.support.envs:BrokenAtStart")
    body = {"models": ["prebuilt/classic-control-heuristics"], "tasks": [{"env": ref, "taskId": "anything", "episodes": 5}]}
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    eps = episodes(evaluation)
    assert len(eps) == 5 and all(e.status == "error" for e in eps)
    assert "server start failed" in eps[0].error and "not run: servers failed to start" in eps[4].error
    # Not run: no verdict and no return, so nothing enters a success rate or a mean (counted in errors).
    assert all((e.success, e.reward) == (None, None) for e in eps)
    (group,) = evaluation_scores(evaluation)["groups"]
    assert (group["episodes"], group["errors"], group["successRate"], group["meanReward"]) == (0, 5, None, None)
    assert evaluation.status == EvaluationStatus.FAILED
    assert evaluation.logs.filter(message__contains="this env cannot be built").exists()


def test_cancellation_is_honoured_between_episodes(tenant_a):
    evaluation = create(tenant_a, cartpole_request())
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    calls = []
    original = execution.ShardRunner.run_episode

    def run_then_cancel(self, index, **kw):
        calls.append(index)
        out = original(self, index, **kw)
        svc.cancel_evaluation(Evaluation.objects.get(pk=evaluation.pk))
        return out

    execution.ShardRunner.run_episode = run_then_cancel
    try:
        assert execution.run_shard(shard.pk) == ShardStatus.CANCELLED
    finally:
        execution.ShardRunner.run_episode = original
    evaluation.refresh_from_db()
    assert calls == [0] and evaluation.status == EvaluationStatus.CANCELLED and len(episodes(evaluation)) == 1


def test_a_cancellation_during_server_start_up_runs_no_episode(tenant_a, monkeypatch):
    """Field case: cancelled at 08:36:05 while the env started (ready 08:36:30), episode 0 still ran 91 steps."""
    evaluation = create(tenant_a, cartpole_request())
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    original = execution.ShardRunner.ensure_servers

    def start_while_cancelled(self):
        original(self)  # the servers really start; the cancellation arrives while they do
        svc.cancel_evaluation(Evaluation.objects.get(pk=evaluation.pk))

    monkeypatch.setattr(execution.ShardRunner, "ensure_servers", start_while_cancelled)
    assert execution.run_shard(shard.pk) == ShardStatus.CANCELLED
    evaluation.refresh_from_db()
    assert evaluation.status == EvaluationStatus.CANCELLED and episodes(evaluation) == []
    assert evaluation.completed_episodes == 0


def test_reaper_requeues_shards_of_dead_workers_and_fails_after_max_attempts(
    tenant_a, monkeypatch, settings, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr("evaluations.dispatch._send", lambda name, shard_id: sent.append(shard_id))
    evaluation = create(tenant_a, cartpole_request())
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    workers.beat()  # this process is a live worker
    Shard.objects.filter(pk=shard.pk).update(
        status="running", claimed_by=workers.worker_identity(), heartbeat_at=timezone.now(), attempts=1
    )
    assert reaper.reap_shards() == []
    # A claim by a process with no liveness record (killed, on another host) is re-queued at once, sent on commit.
    Shard.objects.filter(pk=shard.pk).update(claimed_by="another-host:4242")
    with django_capture_on_commit_callbacks(execute=True):
        assert reaper.reap_shards() == [shard.pk]
    shard.refresh_from_db()
    assert shard.status == "queued" and shard.claimed_by == "" and sent == [shard.pk]
    assert "another-host:4242 stopped answering" in evaluation.logs.last().message
    # A live process whose shard heartbeat went stale counts as lost too; after max attempts the shard fails.
    Shard.objects.filter(pk=shard.pk).update(
        status="running", claimed_by=workers.worker_identity(), heartbeat_at=timezone.now() - timezone.timedelta(hours=1),
        attempts=settings.RLMESH_SHARD_MAX_ATTEMPTS,
    )
    assert reaper.reap_shards() == []
    shard.refresh_from_db()
    evaluation.refresh_from_db()
    assert shard.status == "failed" and evaluation.status == EvaluationStatus.FAILED
    assert "worker was lost" in evaluation.error_message


def test_a_worker_silent_past_the_liveness_timeout_is_dead_on_any_host(tenant_a, monkeypatch, settings):
    sent = []
    monkeypatch.setattr("evaluations.dispatch._send", lambda name, shard_id: sent.append(shard_id))
    evaluation = create(tenant_a, cartpole_request())
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    WorkerProcess.objects.create(identity="host-b:77", hostname="host-b", pid=77,
                                 last_seen=timezone.now() - timezone.timedelta(seconds=settings.RLMESH_WORKER_LIVENESS_TIMEOUT - 5))
    Shard.objects.filter(pk=shard.pk).update(status="running", claimed_by="host-b:77", heartbeat_at=timezone.now(), attempts=1)
    assert reaper.reap_shards() == []  # seen within the timeout
    WorkerProcess.objects.filter(identity="host-b:77").update(
        last_seen=timezone.now() - timezone.timedelta(seconds=settings.RLMESH_WORKER_LIVENESS_TIMEOUT + 1))
    assert reaper.reap_shards() == [shard.pk]


def test_queued_shards_are_resent_only_while_a_worker_sits_idle(tenant_a, monkeypatch, settings):
    sent = []
    monkeypatch.setattr("evaluations.dispatch._send", lambda name, shard_id: sent.append(shard_id))
    evaluation = create(tenant_a, cartpole_request())
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    long_ago = timezone.now() - timezone.timedelta(hours=1)
    Shard.objects.filter(pk=shard.pk).update(queued_at=long_ago)
    # Every worker busy: a shard waiting in the queue is healthy, never re-sent.
    WorkerProcess.objects.create(identity="h:1", hostname="h", pid=1, busy_since=long_ago)
    assert reaper.reap_shards() == [] and sent == []
    # A worker idle for longer than RLMESH_IDLE_RESEND_SECONDS while the shard waited: its message was lost.
    WorkerProcess.objects.create(identity="h:2", hostname="h", pid=2, idle_since=long_ago)
    assert reaper.reap_shards() == [shard.pk] and sent == [shard.pk]
    assert reaper.reap_shards() == []  # queued_at moved: at most one extra message per period


def test_the_watchdog_fails_an_evaluation_that_stopped_making_progress(tenant_a, settings):
    evaluation = create(tenant_a, cartpole_request())
    Evaluation.objects.filter(pk=evaluation.pk).update(status="running")
    assert reaper.stalled_evaluations() == []
    Evaluation.objects.filter(pk=evaluation.pk).update(
        updated_at=timezone.now() - timezone.timedelta(seconds=settings.RLMESH_EVALUATION_STALL_SECONDS + 1))
    assert reaper.stalled_evaluations() == [evaluation.public_id]
    evaluation.refresh_from_db()
    assert evaluation.status == EvaluationStatus.FAILED and "no progress for" in evaluation.error_message
    assert "no progress for" in evaluation.logs.last().message
    assert set(Shard.objects.filter(evaluation=evaluation).values_list("status", flat=True)) == {"cancelled"}


def test_a_worker_that_lost_its_claim_stops_and_overwrites_nothing(tenant_a, monkeypatch):
    """SIGSTOP past the liveness timeout, then SIGCONT: the reaper gave the shard to another worker, which finished it;
    the resumed one records nothing twice and leaves the finished shard as it is."""
    body = cartpole_request()
    body["tasks"][0]["episodes"] = 3
    evaluation = create(tenant_a, body)
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    original = execution.ShardRunner.run_episode

    def run_then_lose_the_claim(self, index, **kwargs):
        outcome = original(self, index, **kwargs)
        if index == 0:  # meanwhile the reaper re-queued the shard and another worker finished it
            Shard.objects.filter(pk=shard.pk).update(status="completed", claimed_by="other-host:9")
        return outcome

    monkeypatch.setattr(execution.ShardRunner, "run_episode", run_then_lose_the_claim)
    assert execution.run_shard(shard.pk) is None
    shard.refresh_from_db()
    assert shard.status == "completed" and shard.claimed_by == "other-host:9"
    assert [e.index for e in episodes(evaluation)] == [0]  # it stopped at the next episode
    assert "lost its claim" in evaluation.logs.last().message


def test_socket_directories_of_dead_workers_are_removed(tmp_path):
    import subprocess

    from evaluations.runtime.reaper import reap_socket_dirs

    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / f"rlm-{dead.pid}-abc").mkdir()
    (tmp_path / f"rlm-c-{dead.pid}-def").mkdir()
    (tmp_path / f"rlm-{os.getpid()}-mine").mkdir()
    (tmp_path / "unrelated").mkdir()
    assert sorted(reap_socket_dirs(str(tmp_path))) == sorted([str(tmp_path / f"rlm-{dead.pid}-abc"), str(tmp_path / f"rlm-c-{dead.pid}-def")])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"rlm-{os.getpid()}-mine", "unrelated"])


def test_env_vars_never_reach_processes_on_the_worker_host(tenant_a, tmp_path):
    """A request's envVars go only into containers: on the worker, PYTHONWARNINGS/BROWSER could run a command
    (Python imports the module a warning filter names; antigravity calls webbrowser)."""
    marker = tmp_path / "pwned"
    body = cartpole_request(models=[{
        "model": "prebuilt/classic-control-heuristics",
        "envVars": {"PYTHONWARNINGS": "ignore::antigravity.x::0", "BROWSER": f"/bin/sh -c 'id > {marker}' #%s"},
    }])
    body["tasks"][0]["episodes"] = 1
    plan = plan_evaluation(body, organization=tenant_a.org)
    assert any("envVars are ignored" in w for w in plan.warnings)
    evaluation = svc.create_evaluation(plan=plan, raw_body="{}", organization=tenant_a.org, creator=tenant_a.user)
    assert evaluation.workloads.get().env_vars == {}
    (model,) = evaluation.config["models"]  # the effective config says so too
    assert model["envVars"] == {} and model["envVarsIgnored"] == ["BROWSER", "PYTHONWARNINGS"]
    # Defense in depth: even a workload that carries them (e.g. planned by an older version) starts clean.
    evaluation.workloads.update(env_vars=body["models"][0]["envVars"])
    run_all(evaluation)
    assert evaluation.status == EvaluationStatus.COMPLETED
    assert not marker.exists()


def test_recorded_videos_count_against_the_organizations_storage_quota(tenant_a, settings):
    body = cartpole_request()
    body["tasks"][0].update(episodes=2, maxSteps=20, record="all")
    evaluation = create(tenant_a, body)
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 10**9
    run_all(evaluation)
    stored = [e for e in episodes(evaluation) if e.video]
    tenant_a.org.refresh_from_db()
    assert len(stored) == 2 and tenant_a.org.storage_bytes == sum(e.video_meta["bytes"] for e in stored)
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = tenant_a.org.storage_bytes  # used up: the next videos are not stored
    again = create(tenant_a, body)
    run_all(again)
    assert [e.video for e in episodes(again)] == ["", ""]
    assert all("storage quota" in e.video_meta["error"] and e.status == "completed" for e in episodes(again))


def test_a_process_that_never_imported_the_tasks_can_send_them(tmp_path):
    """The web server sends shards without importing evaluations.tasks (dispatch finds tasks by name)."""
    import subprocess
    import sys

    code = (
        "import os, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'rlmesh_site.settings'; django.setup()\n"
        "from evaluations import dispatch\n"
        "task = dispatch._task(dispatch.RUN_SHARD)\n"
        "print(task.name, task.queue, dispatch._task(dispatch.PROBE_IMAGE).queue)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "RLMESH_VAR_DIR": str(tmp_path)}, check=True).stdout.split()
    assert out == ["evaluations.run_shard", "shards", "maintenance"]


def test_a_dead_process_of_this_host_is_known_at_once_despite_a_fresh_liveness_record(tenant_a, monkeypatch, settings):
    import subprocess

    monkeypatch.setattr("evaluations.dispatch._send", lambda name, shard_id: None)
    evaluation = create(tenant_a, cartpole_request())
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    dead = subprocess.Popen(["true"])
    dead.wait()
    identity = f"{settings.RLMESH_HOSTNAME}:{dead.pid}"
    WorkerProcess.objects.create(identity=identity, hostname=settings.RLMESH_HOSTNAME, pid=dead.pid)  # seen just now
    Shard.objects.filter(pk=shard.pk).update(status="running", claimed_by=identity, heartbeat_at=timezone.now(), attempts=1)
    assert reaper.reap_shards() == [shard.pk]
    assert "exited" in evaluation.logs.last().message


def test_a_shard_that_makes_progress_is_requeued_past_the_attempt_limit(tenant_a, monkeypatch, settings):
    """Hosts lost one after another while the shard records episodes: not a shard that kills its workers."""
    monkeypatch.setattr("evaluations.dispatch._send", lambda name, shard_id: None)
    evaluation = create(tenant_a, cartpole_request())
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    started = timezone.now() - timezone.timedelta(minutes=1)
    Shard.objects.filter(pk=shard.pk).update(status="running", claimed_by="gone:1", started_at=started,
                                             heartbeat_at=timezone.now(), attempts=settings.RLMESH_SHARD_MAX_ATTEMPTS)
    svc.record_episode(shard=Shard.objects.get(pk=shard.pk), index=0, seed=0, status="completed", reward=1.0,
                       success=True, steps=1, stop_condition="terminated")
    assert reaper.reap_shards() == [shard.pk]
    shard.refresh_from_db()
    assert shard.status == "queued" and shard.attempts == 0


def test_shards_of_one_workload_share_one_model_server_on_a_host(tenant_a, settings):
    import os as _os

    from evaluations.runs.runner import ShardRunner

    body = cartpole_request()
    body["tasks"][0].update(episodes=4, workers=2)
    evaluation = create(tenant_a, body)
    first, second = (Shard.objects.select_related("workload", "evaluation").get(pk=pk)
                     for pk in Shard.objects.filter(evaluation=evaluation).order_by("index").values_list("pk", flat=True))
    a, b = ShardRunner(first), ShardRunner(second)
    a.ensure_servers()
    b.ensure_servers()
    try:
        assert a.model.address == b.model.address and a.model.pid == b.model.pid  # one model server
        assert a.env.address != b.env.address  # each shard its own env (one client per env server)
        assert a.run_episode(0, wall_cap=60).fields["status"] == "completed"
        assert b.run_episode(2, wall_cap=60).fields["status"] == "completed"
        pid = a.model.pid
        a.close()  # b still holds a lease (two runners of one process hold two): the server stays
        import time as _t
        _t.sleep(1.0)  # a server SIGTERMed by mistake would be gone by now (the check raced it before)
        assert b.model.alive()
        b.close()  # the last lease: the server stops
        import time as _time
        deadline = _time.monotonic() + 5
        while _time.monotonic() < deadline and _os.path.exists(f"/proc/{pid}"):
            _time.sleep(0.05)
        assert not _os.path.exists(f"/proc/{pid}")
    finally:
        a.close()
        b.close()


def test_a_zombie_is_neither_alive_nor_the_process_that_had_its_pid():
    import subprocess
    import time as _time

    from evaluations.runtime.processes import pid_alive, start_time

    child = subprocess.Popen(["true"])  # exits at once; not waited for: a zombie until we do
    deadline = _time.monotonic() + 5
    while _time.monotonic() < deadline and open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        _time.sleep(0.01)
    try:
        assert not pid_alive(child.pid) and start_time(child.pid) is None
        assert pid_alive(os.getpid()) and start_time(os.getpid()) is not None
    finally:
        child.wait()


def test_a_shared_server_is_orphaned_only_when_another_owner_died():
    import subprocess

    from evaluations.runtime.shared import SharedServer

    gone = subprocess.Popen(["true"])
    gone.wait()
    alive = subprocess.Popen(["sleep", "30"])
    try:
        def server(owner):
            state = {"pid": gone.pid, "start": 1, "address": "127.0.0.1:1", "log": "/dev/null", "leases": []}
            return SharedServer("k", {**state, **({"owner": owner} if owner else {})}, ready_seconds=0)

        assert server(gone.pid).orphaned()  # its owner died: the model is not at fault
        assert not server(os.getpid()).orphaned()  # this process started it: a crash of its own
        assert not server(alive.pid).orphaned()  # its owner lives: the server crashed by itself
        assert not server(None).orphaned()
    finally:
        alive.kill()
        alive.wait()


def test_an_episode_broken_by_another_process_dying_runs_again_not_recorded_as_an_error(tenant_a, monkeypatch):
    from evaluations.runs.outcome import EpisodeOutcome, error_fields

    body = cartpole_request()
    body["tasks"][0]["episodes"] = 3
    evaluation = create(tenant_a, body)
    (shard,) = Shard.objects.filter(evaluation=evaluation)
    original = execution.ShardRunner.run_episode
    calls = []

    def broken_then_fine(self, index, **kwargs):
        calls.append(index)
        if index == 1 and calls.count(1) <= 2:  # twice: its server's owner died; then it runs
            return EpisodeOutcome(error_fields({"seed": 1}, "episode failed: ConnectionError"), restart=True,
                                  rerun="the shared model server died with the process that started it (pid 7)")
        if index == 2:  # always broken the same way: after MAX_EPISODE_RERUNS it is recorded as the error it is
            return EpisodeOutcome(error_fields({"seed": 2}, "episode failed: ConnectionError"), restart=True,
                                  rerun="the shared model server died with the process that started it (pid 7)")
        return original(self, index, **kwargs)

    monkeypatch.setattr(execution.ShardRunner, "run_episode", broken_then_fine)
    execution.run_shard(shard.pk)
    assert calls == [0, 1, 1, 1, 2, 2, 2]
    assert [(e.index, e.status) for e in episodes(evaluation)] == [(0, "completed"), (1, "completed"), (2, "error")]
    reruns = [m for m in evaluation.logs.values_list("message", flat=True) if "runs again" in m]
    assert len(reruns) == 4 and reruns[0].startswith("episode 1 (seed 1) runs again: the shared model server died")
