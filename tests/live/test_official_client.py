"""The unmodified official rlmesh 0.1.0 CLI and rlmesh.platform.Client against a live platform (both setups)."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from tests.live.conftest import ROOT, wait_for

pytestmark = pytest.mark.live

EXAMPLE = ROOT / "examples" / "cartpole.json"


def test_cli_preview_submit_wait_list_get(platform):
    r = platform.cli("eval", "submit", str(EXAMPLE), "--preview")
    assert r.returncode == 0, r.stderr
    assert "3 workloads" in r.stdout and '"episodes": 30' in r.stdout

    r = platform.cli("eval", "submit", str(EXAMPLE), "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    eval_id = r.stdout.split("Submitted ")[1].split()[0]
    assert f"{platform.url}/evaluations/{eval_id}" in r.stdout
    assert "completed  30/30 episodes" in r.stdout

    r = platform.cli("eval", "list", "--status", "completed", "--tag", "example:cartpole")
    assert r.returncode == 0 and eval_id in r.stdout and "30/30" in r.stdout
    assert "CartPole: random vs heuristic vs PPO" in r.stdout

    r = platform.cli("eval", "get", eval_id)
    body = json.loads(r.stdout)
    assert body["status"] == "completed" and body["request"] == json.loads(EXAMPLE.read_text())

    scores = {g["key"]["model"]: g for g in platform.api(f"/v1/evaluations/{eval_id}/scores")["groups"]}
    assert scores["prebuilt/classic-control-heuristics"]["successRate"] == 1.0
    assert scores["prebuilt/ppo/cartpole"]["successRate"] == 1.0
    assert scores["prebuilt/random"]["successRate"] <= 0.1
    assert all(g["episodes"] == 10 and g["errors"] == 0 for g in scores.values())


def test_cli_reads_stdin_and_reports_errors(platform):
    r = platform.cli("eval", "submit", "-", "--json", stdin=json.dumps({"model": "prebuilt/random", "tasks": [
        {"env": "prebuilt/classic-control", "taskId": "classic/MountainCar-v0", "episodes": 1}]}))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["id"].startswith("eval_")

    r = platform.cli("eval", "submit", "-", stdin=json.dumps({"model": "prebuilt/random", "tasks": [{"env": "x/y", "taskId": "t", "episodes": 1}]}))
    assert r.returncode == 1
    assert 'Error: POST /v1/evaluations failed with HTTP 400 Bad Request: tasks[0].env: unknown environment "x/y"' in r.stderr

    r = platform.cli("eval", "submit", "-", stdin="[1, 2]")
    assert r.returncode == 1 and "must be a JSON object" in r.stderr

    r = platform.cli("eval", "get", "eval_nope")
    assert r.returncode == 1
    assert "Error: GET /v1/evaluations/eval_nope failed with HTTP 404 Not Found: evaluation eval_nope not found" in r.stderr


def test_cli_cancel(platform):
    request = {"name": "long", "model": "prebuilt/classic-control-heuristics",
               "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 200}]}
    r = platform.cli("eval", "submit", "-", stdin=json.dumps(request))
    eval_id = r.stdout.split("Submitted ")[1].split()[0]
    wait_for(lambda: platform.api(f"/v1/evaluations/{eval_id}")["progress"]["completedEpisodes"] >= 1)
    r = platform.cli("eval", "cancel", eval_id)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in (f"✓ {eval_id} is cancelling", f"✓ {eval_id} is cancelled")
    final = wait_for(lambda: (e := platform.api(f"/v1/evaluations/{eval_id}"))["status"] == "cancelled" and e, timeout=60)
    assert final["progress"]["completedEpisodes"] < 200
    r = platform.cli("eval", "wait", eval_id)
    assert r.returncode == 1 and "cancelled" in r.stdout
    r = platform.cli("eval", "cancel", eval_id)
    assert r.returncode == 1 and "HTTP 409 Conflict" in r.stderr


def test_python_client(platform, monkeypatch):
    monkeypatch.setenv("RLMESH_API_KEY", platform.api_key)
    monkeypatch.setenv("RLMESH_PLATFORM_URL", platform.url)
    from rlmesh.platform import Client, PlatformError

    client = Client()
    request = {
        "models": [{"model": "prebuilt/classic-control-heuristics"}, {"model": "prebuilt/random"}],
        "tasks": [
            {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 4, "seed": 100, "workers": 2},
            {"env": "prebuilt/classic-control", "taskId": "classic/MountainCar-v0", "episodes": 3, "seed": 0},
        ],
        "tags": {"suite": "python-client", "run": uuid.uuid4().hex},
    }
    preview = client.preview(request)
    assert len(preview["workloads"]) == 4 and preview["estimates"]["episodes"] == 14
    submitted = client.submit(request)
    final = client.wait(submitted["id"], poll_seconds=1, timeout=300)
    assert final["status"] == "completed" and final["progress"]["completedEpisodes"] == 14
    listed = [e["id"] for e in client.evaluations(tags=request["tags"], limit=1)]
    assert listed == [submitted["id"]]

    by_task = {(g["key"]["model"], g["key"]["taskId"]): g for g in client.scores(submitted["id"])["groups"]}
    assert by_task[("prebuilt/classic-control-heuristics", "classic/CartPole-v1")]["successRate"] == 1.0
    assert by_task[("prebuilt/classic-control-heuristics", "classic/MountainCar-v0")]["successRate"] == 1.0
    assert by_task[("prebuilt/random", "classic/CartPole-v1")]["successRate"] <= 0.1
    for group_by in ("task", "scenario", "benchmark", "perturbation", "model"):
        scores = client.scores(submitted["id"], group_by=group_by)
        assert scores["groupBy"] == group_by
        assert sum(g["episodes"] for g in scores["groups"]) == 14
    assert len(client.scores(submitted["id"], group_by="model")["groups"]) == 2
    assert {g["key"]["benchmark"] for g in client.scores(submitted["id"], group_by="benchmark")["groups"]} == {"classic"}
    metrics = client.metrics(submitted["id"])
    assert metrics["episodes"] == 14 and metrics["stepsPerSecond"] > 0
    assert metrics["latencyMs"]["predict"]["p50"] > 0 and metrics["serverStartSeconds"]["env"]["n"] >= 4
    with pytest.raises(PlatformError) as err:
        client.evaluation("eval_missing")
    assert err.value.status == 404


def test_killing_the_worker_mid_shard_loses_and_duplicates_nothing(platform):
    request = {"name": "kill-test", "model": "prebuilt/classic-control-heuristics",
               "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 12}]}
    r = platform.cli("eval", "submit", "-", stdin=json.dumps(request))
    eval_id = r.stdout.split("Submitted ")[1].split()[0]
    wait_for(lambda: platform.api(f"/v1/evaluations/{eval_id}")["progress"]["completedEpisodes"] >= 3, interval=0.2)
    victim = platform.worker_of_servers()
    servers = platform.servers_of()[victim]
    assert servers, "the shard's env and model servers should be running"
    platform.kill_worker(victim)  # SIGKILL the whole worker that runs the shard: main process and pool
    done_at_kill = platform.api(f"/v1/evaluations/{eval_id}")["progress"]["completedEpisodes"]
    assert done_at_kill < 12
    # PDEATHSIG takes the episode loop's servers down with the worker: nothing is left running.
    wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in servers), timeout=10)
    platform.start_worker(hostname="host-restarted" if hasattr(platform, "redis") else None)  # its start-up reaper re-queues the dead worker's shard
    final = wait_for(lambda: (e := platform.api(f"/v1/evaluations/{eval_id}"))["status"] in ("completed", "failed") and e, timeout=300)
    assert final["status"] == "completed", final
    episodes = platform.episodes(eval_id)
    assert sorted(e["index"] for e in episodes) == list(range(12))
    assert all(e["status"] == "completed" and e["success"] for e in episodes)
    messages = [line["message"] for line in platform.api(f"/v1/evaluations/{eval_id}/logs")["items"]]
    assert any(("stopped answering" in m or "exited" in m) and "re-queued" in m for m in messages), messages
    # The re-run resumes after what the killed run recorded (its attempt count starts over: it made progress).
    assert any(f"resumed: {done_at_kill}" in m or "attempt 2" in m for m in messages), messages


def test_field_cases_through_the_unmodified_clients(live, monkeypatch):
    """scenario_tasks(..., tasks=[0]) builds classic/0; a capitalised reference; --limit 0; probing a prebuilt image."""
    monkeypatch.setenv("RLMESH_API_KEY", live.api_key)
    monkeypatch.setenv("RLMESH_PLATFORM_URL", live.url)
    from rlmesh.platform import Client, PlatformError, scenario_tasks

    client = Client()
    tasks = scenario_tasks("prebuilt/classic-control", "classic", tasks=[0], episodes=2)
    assert tasks[0]["taskId"] == "classic/0"
    submitted = client.submit({"model": "prebuilt/classic-control-heuristics", "tasks": tasks})
    final = client.wait(submitted["id"], poll_seconds=1, timeout=300)
    assert final["status"] == "completed" and final["config"]["tasks"][0]["taskId"] == "classic/CartPole-v1"
    (group,) = client.scores(submitted["id"])["groups"]
    assert group["key"]["taskId"] == "classic/CartPole-v1" and group["successRate"] == 1.0

    with pytest.raises(PlatformError) as err:
        client.get("/v1/images/Prebuilt/classic-control")
    assert err.value.status == 400 and "names are lowercase (prebuilt/classic-control)" in str(err.value)
    with pytest.raises(PlatformError) as err:
        client.post("/v1/images/prebuilt/random/probes", {})
    assert err.value.status == 403 and "prebuilt image" in str(err.value)

    r = live.cli("eval", "list", "--limit", "0")
    assert r.returncode == 1 and "HTTP 400 Bad Request: limit: must be a whole number from 1 to 500" in r.stderr, r.stderr
    r = live.cli("eval", "submit", "-", stdin=json.dumps({"model": "Prebuilt/random", "tasks": tasks}))
    assert r.returncode == 1 and 'Bad Request: model: "Prebuilt/random" has uppercase letters' in r.stderr, r.stderr
