"""A pushed image whose model declares rlmesh's batched corner, batched across a host's episodes (issue 36;
``evaluations.prebuilt.fused``, ``runtime.container_hub``): with ``RLMESH_MODEL_BATCH=4`` the image's inference
process runs in a container of the image with no network, each shard's thin server in a container of its own, and
``workers: 1`` and ``workers: 4`` give the same trajectories while the passes hold rows of several episodes."""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

from tests.containers.test_images import REGISTRY, push, sh, submit, wait_probe
from tests.support.live import LivePlatform, wait_for

pytestmark = [pytest.mark.live, pytest.mark.containers]


@pytest.fixture(scope="module")
def batched_platform(tmp_path_factory):
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", 5000)) != 0, "port 5000 is taken; the test registry needs it"
    sh("bash", "containers/base/build-base.sh", timeout=900)
    sh("bash", "containers/build-images.sh", "ppo", timeout=600)
    var = tmp_path_factory.mktemp("batched")
    p = LivePlatform(var, RLMESH_REGISTRY_HOST=REGISTRY, DOCKER_HOST=f"unix://{var}/podman.sock",
                     RLMESH_SHARD_HEARTBEAT_TIMEOUT="300", RLMESH_MODEL_BATCH="4", RLMESH_MODEL_BATCH_WAIT_MS="100")
    p.prepare()
    p.start_web()
    env = {**os.environ, **p.env}
    sh("bash", "containers/start-services.sh", env=env, timeout=120)
    p.start_worker(concurrency=4)
    try:
        yield p
    finally:
        p.stop()
        sh("bash", "containers/stop-services.sh", env=env, check=False)


def _containers(platform, label: str) -> list[str]:
    """``"<name> <network mode>"`` of the platform's containers labelled ``label``."""
    env = {**os.environ, "CONTAINER_HOST": platform.env["DOCKER_HOST"]}
    names = subprocess.run(["podman", "--remote", "ps", "-a", "--format", "{{.Names}}", "--filter",
                            f"label=dev.rlmesh.platform.name={label}"], capture_output=True, text=True, env=env)
    seen = []
    for name in names.stdout.split():
        mode = subprocess.run(["podman", "--remote", "inspect", "--format", "{{.HostConfig.NetworkMode}}", name],
                              capture_output=True, text=True, env=env).stdout.strip()
        seen.append(f"{name} {mode}")
    return seen


@pytest.mark.timeout(1200)
def test_a_pushed_images_batched_corner_batches_across_shards_in_containers(batched_platform):
    platform = batched_platform
    assert push(platform, "localhost/rlmesh-ppo:latest", "demo/ppo-batched:latest", platform.api_key).returncode == 0
    image = wait_probe(platform, "demo/ppo-batched")
    assert image["versions"][0]["probeStatus"] == "passed", image["versions"][0]["probeLog"]
    task = {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 8, "seed": 11,
            "maxSteps": 80}
    runs = {}
    for workers in (1, 4):
        r = submit(platform, {"name": f"batched image w{workers}", "model": "demo/ppo-batched/cartpole",
                              "tasks": [{**task, "workers": workers}]})
        assert r.returncode == 0, r.stderr
        eval_id = json.loads(r.stdout)["id"]
        seen_hub: list[str] = []

        def finished():
            seen_hub.extend(_containers(platform, f"{eval_id}-inference"))
            e = platform.api(f"/v1/evaluations/{eval_id}")
            return e["status"] in ("completed", "failed", "cancelled") and e

        final = wait_for(finished, timeout=900, interval=1)
        assert final["status"] == "completed", final
        items = sorted(platform.episodes(eval_id), key=lambda i: i["index"])
        assert [i["status"] for i in items] == ["completed"] * 8 and {i["modelBatch"] for i in items} == {4}
        batches = platform.api(f"/v1/evaluations/{eval_id}/metrics")["modelBatches"]
        hubs = sorted((platform.var / "run").glob(f"{eval_id}-*-model-inference-*.log"))
        runs[workers] = ([i["trajectoryDigest"] for i in items], batches, hubs, set(seen_hub))
        # Every step's row counted (read as the shards ended, not as the process's owner last copied them).
        assert sum(int(rows) * n for rows, n in batches["calls"].items()) >= sum(i["steps"] for i in items), batches
        # Removed with the evaluation's last lease (its owner removes it once told to stop, a moment later).
        wait_for(lambda: not _containers(platform, f"{eval_id}-inference"), timeout=60, interval=0.5)
    (one, one_batches, _, _), (four, four_batches, four_hubs, four_seen) = runs[1], runs[4]
    print("BATCHED IMAGE", one_batches, four_batches, len(four_hubs), four_seen)
    assert one == four and len(set(one)) == 8
    assert one_batches["size"] == four_batches["size"] == 4
    assert max(int(rows) for rows in four_batches["calls"]) > 1, four_batches  # shards met in the image's process
    assert four_hubs and "inference process ready" in four_hubs[0].read_text()
    # The process ran in a container of the image, labelled for the reaper, with no network at all.
    assert four_seen and {seen.split()[1] for seen in four_seen if len(seen.split()) > 1} == {"none"}, four_seen
