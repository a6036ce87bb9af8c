"""Images end to end: build on the offline base, push with podman using platform credentials, probes, and
evaluations that run the pushed images in isolated containers through the Docker Engine API (Podman)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import pytest

from tests.support.live import ROOT, LivePlatform, wait_for

pytestmark = [pytest.mark.live, pytest.mark.containers]
REGISTRY = "127.0.0.1:5000"


def sh(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(list(args), capture_output=True, text=True, cwd=ROOT, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", 5000)) != 0, "port 5000 is taken; the test registry needs it"
    sh("bash", "containers/base/build-base.sh", timeout=900)
    sh("bash", "containers/build-images.sh", timeout=600)
    var = tmp_path_factory.mktemp("containers")
    p = LivePlatform(var, RLMESH_REGISTRY_HOST=REGISTRY, DOCKER_HOST=f"unix://{var}/podman.sock", RLMESH_SHARD_HEARTBEAT_TIMEOUT="300")
    p.prepare()
    p.other_key = json.loads(p.manage("seed_demo", "--org", "other", "--username", "olga"))["apiKey"]
    p.start_web()
    env = {**os.environ, **p.env}
    sh("bash", "containers/start-services.sh", env=env, timeout=120)
    p.start_worker()
    try:
        yield p
    finally:
        p.stop()
        sh("bash", "containers/stop-services.sh", env=env, check=False)


def push(platform, local: str, remote: str, key: str) -> subprocess.CompletedProcess:
    sh("podman", "login", "--tls-verify=false", "-u", "anyone", "-p", key, REGISTRY)
    sh("podman", "tag", local, f"{REGISTRY}/{remote}")
    return sh("podman", "push", "--tls-verify=false", f"{REGISTRY}/{remote}", check=False, timeout=300)


def image(platform, ref: str) -> dict | None:
    try:
        return platform.api(f"/v1/images/{ref}")
    except Exception:  # noqa: BLE001 - 404 until the push event arrives
        return None


def wait_probe(platform, ref: str) -> dict:
    def done():
        img = image(platform, ref)
        return img if img and img["versions"] and img["versions"][0]["probeStatus"] in ("passed", "failed") else None

    return wait_for(done, timeout=240, interval=1)


def submit(platform, body: dict) -> subprocess.CompletedProcess:
    return platform.cli("eval", "submit", "-", "--json", stdin=json.dumps(body))


def check_image(platform, image: str) -> subprocess.CompletedProcess:
    """The official CLI's own admission pre-check (``docker image inspect`` through Podman's Docker API)."""
    env = {**os.environ, "DOCKER_HOST": platform.env["DOCKER_HOST"], "RLMESH_WORKFLOW_EDITION": "2026.06"}
    return subprocess.run([str(ROOT / ".venv/bin/rlmesh"), "check-image", image, "--json"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("name", ["classic-control", "classic-control-heuristics", "ppo"])
def test_the_catalog_images_pass_rlmesh_check_image(platform, name):
    """Field case: the catalog's own images failed ``rlmesh check-image`` (``declares no tags``). The env publishes
    EnvTags; the models declare NO_ADAPTER (a warning only: no class-level ModelSpec)."""
    r = check_image(platform, f"localhost/rlmesh-{name}:latest")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["failed"] == [], report
    if name == "classic-control":
        assert report["warnings"] == [] and any("env_tags: declared" in line for line in report["passed"]), report


def test_push_probe_run_pin_and_deny(platform):
    info = platform.api("/v1/registry/info")
    assert info == {"host": REGISTRY, "namespaces": ["demo"]}

    assert push(platform, "localhost/rlmesh-classic-control:latest", "demo/cartpole-env:latest", platform.api_key).returncode == 0
    assert push(platform, "localhost/rlmesh-classic-control-heuristics:latest", "demo/heuristics:latest", platform.api_key).returncode == 0
    env = wait_probe(platform, "demo/cartpole-env")
    model = wait_probe(platform, "demo/heuristics")
    assert env["kind"] == "env" and env["versions"][0]["probeStatus"] == "passed", env["versions"][0]["probeLog"]
    assert model["kind"] == "model" and model["versions"][0]["probeStatus"] == "passed", model["versions"][0]["probeLog"]
    assert "smoke test: reset + one step" in env["versions"][0]["probeLog"]
    assert {s["id"] for s in env["scenarios"]} >= {"classic/CartPole-v1", "classic/MountainCar-v0"}
    first_digest = env["currentVersion"]

    body = {"model": "demo/heuristics", "tasks": [{"env": "demo/cartpole-env", "taskId": "classic/CartPole-v1", "episodes": 3},
                                                  {"env": "demo/cartpole-env", "taskId": "classic/MountainCar-v0", "episodes": 2}]}
    r = submit(platform, body)
    eval_id = json.loads(r.stdout)["id"]
    final = wait_for(lambda: (e := platform.api(f"/v1/evaluations/{eval_id}"))["status"] in ("completed", "failed") and e, timeout=300)
    assert final["status"] == "completed", final
    assert final["config"]["tasks"][0]["digest"] == first_digest
    episodes = platform.api(f"/v1/evaluations/{eval_id}/episodes")["items"]
    cartpole = [e for e in episodes if e["taskId"] == "classic/CartPole-v1"]
    mountaincar = [e for e in episodes if e["taskId"] == "classic/MountainCar-v0"]
    assert [e["steps"] for e in cartpole] == [500, 500, 500]
    assert all(e["terminated"] and e["steps"] < 200 for e in mountaincar)  # the heuristic reaches the flag
    # Field case: a perfect policy scored 0 % here (success "terminated": the pole fell). The image declares its
    # criteria (variant metadata), the probe recorded them: every episode succeeds by the scenario's criterion.
    assert {(e["success"], e["successSource"]) for e in episodes} == {(True, "criterion")}
    assert next(s for s in env["scenarios"] if s["id"] == "classic/CartPole-v1")["successCriterion"]["kind"] == "survived"
    assert "success criteria: 5 of 5 scenarios declare one" in env["versions"][0]["probeLog"]
    scores = platform.api(f"/v1/evaluations/{eval_id}/scores")["groups"]
    assert [g["successRate"] for g in scores] == [1.0, 1.0]

    # a new :latest push moves the current version; a pinned digest keeps running the old one
    sh("podman", "build", "-q", "-t", "localhost/rlmesh-classic-control:v2", "--label", "variant=v2",
       "-f", "/dev/stdin", str(ROOT / "var/containers/ctx-classic-control"), input="FROM localhost/rlmesh-classic-control:latest\nLABEL variant=v2\n")
    assert push(platform, "localhost/rlmesh-classic-control:v2", "demo/cartpole-env:latest", platform.api_key).returncode == 0
    moved = wait_for(lambda: (i := image(platform, "demo/cartpole-env")) and i["currentVersion"] != first_digest and i, timeout=120)
    pinned = {"model": "demo/heuristics", "tasks": [{"env": f"demo/cartpole-env@{first_digest}", "taskId": "classic/CartPole-v1", "episodes": 1}]}
    preview = platform.cli("eval", "submit", "-", "--preview", "--json", stdin=json.dumps(pinned))
    assert json.loads(preview.stdout)["config"]["tasks"][0]["digest"] == first_digest != moved["currentVersion"]

    # another organization's namespace: push denied, pull denied, invisible through the API
    denied = push(platform, "localhost/rlmesh-classic-control:latest", "other/stolen:latest", platform.api_key)
    assert denied.returncode != 0 and ("denied" in denied.stderr.lower() or "unauthorized" in denied.stderr.lower())
    sh("podman", "logout", REGISTRY, check=False)
    sh("podman", "login", "--tls-verify=false", "-u", "olga", "-p", platform.other_key, REGISTRY)
    pull = sh("podman", "pull", "--tls-verify=false", f"{REGISTRY}/demo/heuristics:latest", check=False, timeout=120)
    assert pull.returncode != 0
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", f"Authorization: Bearer {platform.other_key}",
                        f"{platform.url}/v1/images/demo/heuristics"], capture_output=True, text=True)
    assert r.stdout == "404"


def test_the_readme_own_image_steps_score_a_perfect_policy_100_percent(platform):
    """Field case, verbatim: rlmesh-classic-control pushed as demo/my-env, evaluated with the prebuilt heuristics on
    classic/CartPole-v1: 5 episodes of 500/500 steps scored 0 % (success "terminated"), 100 % on prebuilt."""
    assert push(platform, "localhost/rlmesh-classic-control:latest", "demo/my-env:latest", platform.api_key).returncode == 0
    assert wait_probe(platform, "demo/my-env")["versions"][0]["probeStatus"] == "passed"
    body = {"model": "prebuilt/classic-control-heuristics", "tasks": [{"env": "demo/my-env", "taskId": "classic/CartPole-v1", "episodes": 5}]}
    r = submit(platform, body)
    assert not any("nothing defines success" in w for w in json.loads(r.stdout)["warnings"])
    eval_id = json.loads(r.stdout)["id"]
    wait_for(lambda: platform.api(f"/v1/evaluations/{eval_id}")["status"] in ("completed", "failed"), timeout=300)
    episodes = platform.api(f"/v1/evaluations/{eval_id}/episodes")["items"]
    assert [(e["steps"], e["success"], e["successSource"]) for e in episodes] == [(500, True, "criterion")] * 5
    assert platform.api(f"/v1/evaluations/{eval_id}/scores")["groups"][0]["successRate"] == 1.0


def test_broken_image_fails_its_probe_and_is_refused(platform):
    assert push(platform, "localhost/rlmesh-broken-crash:latest", "demo/broken:latest", platform.api_key).returncode == 0
    broken = wait_probe(platform, "demo/broken")
    version = broken["versions"][0]
    assert version["probeStatus"] == "failed"
    assert "exited with code 3" in version["probeLog"] and "configuration error: missing weights" in version["probeLog"]
    r = platform.cli("eval", "submit", "-", stdin=json.dumps({"model": "prebuilt/random", "tasks": [{"env": "demo/broken", "taskId": "x", "episodes": 1}]}))
    assert r.returncode == 1 and "tasks[0].env" in r.stderr and "probe is failed" in r.stderr

    # a bad describe label, a model that claims to be an env, a malformed package label: each fails its probe
    ctx = str(ROOT / "var/containers/ctx-classic-control")
    cases = {
        "bad-label": ("localhost/rlmesh-classic-control:latest", "LABEL dev.rlmesh.describe='not json'", "dev.rlmesh.describe is not JSON"),
        "model-as-env": ("localhost/rlmesh-classic-control-heuristics:latest",
                         'LABEL dev.rlmesh.describe=\'{"schema_version": 1, "kind": "env", "env_tags": null}\'',
                         "serves a model where an env is expected"),
        "bad-package": ("localhost/rlmesh-ppo:latest", "LABEL dev.rlmesh.package='{\"schemaVersion\": 2}'", "dev.rlmesh.package is malformed"),
    }
    for name, (base, label, reason) in cases.items():
        sh("podman", "build", "-q", "-t", f"localhost/rlmesh-{name}:latest", "-f", "/dev/stdin", ctx, input=f"FROM {base}\n{label}\n")
        assert push(platform, f"localhost/rlmesh-{name}:latest", f"demo/{name}:latest", platform.api_key).returncode == 0
    for name, (_, _, reason) in cases.items():
        version = wait_probe(platform, f"demo/{name}")["versions"][0]
        assert version["probeStatus"] == "failed" and reason in version["probeLog"], (name, version["probeLog"])

    # the ppo image's package label declares its checkpoint: the reference may name it
    assert push(platform, "localhost/rlmesh-ppo:latest", "demo/ppo:latest", platform.api_key).returncode == 0
    ppo = wait_probe(platform, "demo/ppo")
    assert ppo["versions"][0]["probeStatus"] == "passed" and ppo["versions"][0]["checkpoints"] == ["cartpole"], ppo["versions"][0]["probeLog"]
    body = {"model": "demo/ppo/cartpole", "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 2}]}
    eval_id = json.loads(submit(platform, body).stdout)["id"]
    final = wait_for(lambda: (e := platform.api(f"/v1/evaluations/{eval_id}"))["status"] in ("completed", "failed") and e, timeout=300)
    assert final["status"] == "completed" and all(e["steps"] == 500 for e in platform.api(f"/v1/evaluations/{eval_id}/episodes")["items"])
    logs = [line["message"] for line in platform.api(f"/v1/evaluations/{eval_id}/logs")["items"]]
    assert any("model container output" in m and "RLMesh serving model" in m for m in logs), logs

    # an env image pushed where a model is expected fails too
    assert push(platform, "localhost/rlmesh-classic-control:latest", "demo/not-a-model:latest", platform.api_key).returncode == 0
    wait_probe(platform, "demo/not-a-model")  # probed as an env (its label says env)
    r = platform.cli("eval", "submit", "-", stdin=json.dumps({"model": "demo/not-a-model", "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 1}]}))
    assert r.returncode == 1 and "is an env, not a model" in r.stderr


def test_killing_a_container_mid_episode_records_an_error_and_continues(platform):
    body = {"model": "demo/heuristics", "tasks": [{"env": "demo/cartpole-env", "taskId": "classic/CartPole-v1", "episodes": 20}]}
    eval_id = json.loads(submit(platform, body).stdout)["id"]
    wait_for(lambda: platform.api(f"/v1/evaluations/{eval_id}")["progress"]["completedEpisodes"] >= 2, timeout=180, interval=0.3)
    names = sh("podman", "ps", "--filter", "label=dev.rlmesh.platform=1", "--format", "{{.Names}}").stdout.split()
    env_containers = [n for n in names if eval_id in n and n.split("-")[-2] == "env" or (eval_id in n and "-env-" in n)]
    assert env_containers, names
    sh("podman", "kill", env_containers[0])
    final = wait_for(lambda: (e := platform.api(f"/v1/evaluations/{eval_id}"))["status"] in ("completed", "failed") and e, timeout=300)
    episodes = platform.api(f"/v1/evaluations/{eval_id}/episodes?limit=100")["items"]
    assert sorted(e["index"] for e in episodes) == list(range(20))
    errors = [e for e in episodes if e["status"] == "error"]
    assert len(errors) == 1 and "server crashed" in errors[0]["error"]
    assert final["status"] == "completed" and final["progress"]["erroredEpisodes"] == 1
    time.sleep(1)
    left = sh("podman", "ps", "-a", "--filter", "label=dev.rlmesh.platform=1", "--format", "{{.Names}}").stdout.split()
    assert not [n for n in left if eval_id in n], left


def test_the_reaper_removes_orphaned_containers(platform):
    import docker

    client = docker.DockerClient(base_url=platform.env["DOCKER_HOST"])
    instance = subprocess.run([str(ROOT / ".venv/bin/python"), "-c", "import django; django.setup(); from django.conf import settings; print(settings.RLMESH_INSTANCE_ID)"],
                              capture_output=True, text=True, env={**os.environ, **platform.env}, cwd=ROOT).stdout.strip()
    orphan = client.containers.run("localhost/rlmesh-classic-control:latest", detach=True,
                                   labels={"dev.rlmesh.platform": "1", "dev.rlmesh.platform.instance": instance, "dev.rlmesh.platform.name": "eval_gone-w0-s0-env"})
    foreign = client.containers.run("localhost/rlmesh-classic-control:latest", detach=True,
                                    labels={"dev.rlmesh.platform": "1", "dev.rlmesh.platform.instance": "another-deployment", "dev.rlmesh.platform.name": "eval_theirs-w0-s0-env"})
    env = {**os.environ, **platform.env}
    code = "from evaluations.runtime.reaper import reap_containers; print(reap_containers())"
    out = subprocess.run([str(ROOT / ".venv/bin/python"), "-c", f"import django; django.setup(); {code}"],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    assert "eval_gone-w0-s0-env" in out.stdout, out.stderr
    remaining = [c.id for c in client.containers.list(all=True)]
    assert orphan.id not in remaining and foreign.id in remaining  # another deployment's container is left alone
    foreign.remove(force=True)


def test_sandboxed_containers_reach_nothing_but_answer_on_their_port(platform, settings):
    """From inside a container on the sandbox network, a host service listening on all interfaces times out;
    the same connect from a container on the engine's default bridge succeeds (so the network is what blocks)."""
    import docker

    from evaluations.runtime.docker import isolation_kwargs

    listener = socket.socket()
    listener.bind(("0.0.0.0", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    client = docker.DockerClient(base_url=platform.env["DOCKER_HOST"])
    probe = ("import socket,sys\ns=socket.socket(); s.settimeout(3)\n"
             "try:\n s.connect((sys.argv[1], int(sys.argv[2]))); print('connected')\nexcept OSError as e: print('blocked', e)")
    results = {}
    for network in ("rlsandbox", "podman"):
        settings.RLMESH_CONTAINER_NETWORK = network
        c = client.containers.run("localhost/rlmesh-classic-control:latest", detach=True, **isolation_kwargs())
        try:
            c.reload()
            gateway = c.attrs["NetworkSettings"]["Networks"][network]["Gateway"]
            results[network] = c.exec_run(["python3", "-c", probe, gateway, str(port)]).output.decode()
        finally:
            c.remove(force=True)
    listener.close()
    assert results["podman"].startswith("connected"), results
    assert results["rlsandbox"].startswith("blocked"), results


def test_env_containers_serve_on_a_unix_socket_without_any_network(platform, settings, monkeypatch):
    import rlmesh

    from evaluations.runtime import ServerSpec
    from evaluations.runtime import docker as runtime

    settings.RLMESH_DOCKER_HOST = platform.env["DOCKER_HOST"]
    monkeypatch.setattr(runtime, "pull", lambda image_ref: None)  # a locally built image
    server = runtime.DockerRuntime().start(
        ServerSpec("env", "oci://localhost/rlmesh-classic-control:latest", {"env_id": "CartPole-v1"}), name="unix-check")
    try:
        assert server.address.startswith("unix://")
        server.container.reload()
        assert server.container.attrs["HostConfig"]["NetworkMode"] == "none"
        interfaces = server.container.exec_run(["python3", "-c", "import socket; print(sorted(n for _, n in socket.if_nameindex()))"]).output.decode()
        assert interfaces.strip() == "['lo']", interfaces
        # NO_ADAPTER: the env publishes EnvTags, and rlmesh refuses a spec-less model there
        model = rlmesh.numpy.Model(lambda obs: int(obs[2] + 0.5 * obs[3] > 0), spec=rlmesh.NO_ADAPTER)
        result = rlmesh.run(model, server.address, seeds=[0], max_episode_steps=50)
        assert result.episodes[0].steps == 50
    finally:
        server.stop()
    assert not os.path.exists(server.address.removeprefix("unix://"))


@pytest.mark.timeout(1800)
def test_an_organizations_lerobot_checkpoint_travels_as_an_image_or_an_upload(platform, tmp_path):
    """Issue 35: a tiny ACT checkpoint (lerobot's own classes, random weights) as a model-car image built and pushed with
    podman, probed by loading it, run on 2 LIBERO episodes with its SHA-256 on each; the same folder uploaded from the
    catalog page becomes the same checkpoint and gives the same trajectory; a folder with a link fails its probe;
    another organization gets a 404."""
    import re

    import requests

    from evaluations.prebuilt.lerobot.checkpoints import sha256_of

    lerobot = ROOT / ".venv-lerobot" / "bin" / "python"
    sh(str(lerobot), "tests/fixtures/build_tiny_lerobot.py", str(tmp_path), "act", timeout=900,
       env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    sha = sha256_of(tmp_path / "tiny-act")
    (tmp_path / "Containerfile").write_text("FROM scratch\nCOPY tiny-act /checkpoint\n"
                                            "LABEL dev.rlmesh.lerobot.checkpoint=/checkpoint\n")
    sh("podman", "build", "-q", "-t", "localhost/act-car:v1", "-f", str(tmp_path / "Containerfile"), str(tmp_path))
    assert push(platform, "localhost/act-car:v1", "demo/act-libero:v1", platform.api_key).returncode == 0
    version = wait_probe(platform, "demo/act-libero")["versions"][0]
    assert version["probeStatus"] == "passed", version["probeLog"]
    assert "loaded by the LeRobot model server" in version["probeLog"]
    assert [(c["type"], c["sha256"], c["checkpoint"]) for c in version["lerobot"]] == [("act", sha, "/checkpoint")]

    task = {"env": "prebuilt/libero", "taskId": "libero_object/9", "seed": 0, "maxSteps": 12}

    def run(model: str, episodes: int) -> list[dict]:
        eval_id = json.loads(submit(platform, {"model": model, "tasks": [{**task, "episodes": episodes}]}).stdout)["id"]
        final = wait_for(lambda: (e := platform.api(f"/v1/evaluations/{eval_id}"))["status"] in ("completed", "failed")
                         and e, timeout=900, interval=2)
        assert final["status"] == "completed", final
        return platform.api(f"/v1/evaluations/{eval_id}/episodes")["items"]

    pushed = run("demo/act-libero:v1", 2)
    assert [(e["status"], e["steps"], e["checkpointSha256"]) for e in pushed] == [("completed", 12, sha)] * 2

    # the catalog page's upload makes the same image: the same files, the same first episode
    web = requests.Session()
    page = web.get(f"{platform.url}/accounts/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    web.post(f"{platform.url}/accounts/login/", data={"csrfmiddlewaretoken": token, "username": "demo",
             "password": "demo-password"}, headers={"Referer": f"{platform.url}/accounts/login/"}, timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', web.get(f"{platform.url}/images", timeout=30).text)[1]
    sh("tar", "-czf", str(tmp_path / "act.tar.gz"), "-C", str(tmp_path), "tiny-act")
    with (tmp_path / "act.tar.gz").open("rb") as archive:
        r = web.post(f"{platform.url}/images/checkpoints", data={"csrfmiddlewaretoken": token, "repository": "act-upload",
                     "tag": "v1"}, files={"archive": ("act.tar.gz", archive)}, headers={"Referer": f"{platform.url}/images"},
                     timeout=120, allow_redirects=False)
    assert r.status_code == 302, r.text[-2000:]
    uploaded = wait_probe(platform, "demo/act-upload")["versions"][0]
    assert uploaded["probeStatus"] == "passed" and uploaded["tags"] == ["v1"], uploaded["probeLog"]
    assert [c["sha256"] for c in uploaded["lerobot"]] == [sha]
    assert "pushed" in web.get(f"{platform.url}/images", timeout=30).text
    (again,) = run("demo/act-upload:v1", 1)
    assert again["trajectoryDigest"] == pushed[0]["trajectoryDigest"]

    # a link in the folder: read out of the image, refused, never loaded
    (tmp_path / "tiny-act" / "weights-link").symlink_to("model.safetensors")
    sh("podman", "build", "-q", "-t", "localhost/act-car:link", "-f", str(tmp_path / "Containerfile"), str(tmp_path))
    assert push(platform, "localhost/act-car:link", "demo/act-link:v1", platform.api_key).returncode == 0
    linked = wait_probe(platform, "demo/act-link")["versions"][0]
    assert linked["probeStatus"] == "failed" and "weights-link is a link" in linked["probeLog"], linked["probeLog"]

    other = requests.get(f"{platform.url}/v1/images/demo/act-libero", headers={"Authorization": f"Bearer {platform.other_key}"},
                         timeout=30)
    assert other.status_code == 404
