"""Any openpi policy server (issue 35): a model entry names a websocket server instead of an image, LIBERO's
observation goes over the wire as openpi's LIBERO example sends it, the reply's chunk is replayed for ``replanSteps``
steps, the key is kept encrypted and never shown, and the connection follows the outbound rules. End to end against a
real websocket server that replays an expert episode's actions: the episode succeeds, and with ``replanSteps: 1`` its
digest is the expert's own."""

from __future__ import annotations

import numpy as np
import pytest

from evaluations.models import Evaluation, Workload
from evaluations.prebuilt.openpi.policy import OpenPIError, OpenPIPolicy, libero_request
from evaluations.runs.steps import load_steps
from tests.support.execution import create, episodes, run_all
from tests.support.libero import needs_libero_venv
from tests.support.openpi_server import ReplayServer

TASK = {"env": "prebuilt/libero", "taskId": "libero_object/9", "episodes": 1, "seed": 0}


def _observation() -> dict:
    rng = np.random.default_rng(0)
    return {"pixels": {"image": rng.integers(0, 255, (256, 256, 3), np.uint8),
                       "image2": rng.integers(0, 255, (256, 256, 3), np.uint8)},
            "agent_pos": np.arange(8, dtype=np.float32), "instruction": "put it in the basket"}


def test_a_libero_observation_goes_over_the_wire_as_openpis_libero_example_sends_it():
    request = libero_request(_observation())
    assert request["observation/image"].shape == (224, 224, 3) and request["observation/image"].dtype == np.uint8
    assert request["observation/wrist_image"].shape == (224, 224, 3)
    assert request["observation/state"].dtype == np.float32 and request["observation/state"].tolist() == list(range(8))
    assert request["prompt"] == "put it in the basket"
    with pytest.raises(KeyError, match="pixels.image2"):
        libero_request({**_observation(), "pixels": {"image": np.zeros((256, 256, 3), np.uint8)}})


def test_the_chunk_is_replayed_for_replan_steps_and_each_episode_keeps_its_own(monkeypatch):
    with ReplayServer(np.arange(40, dtype=np.float32).reshape(-1, 1).repeat(7, 1), advance=3, horizon=5) as server:
        monkeypatch.setenv("RLMESH_AGENT_ALLOW_PRIVATE_TARGETS", "true")
        policy = OpenPIPolicy()
        policy.load(url=server.url, replan_steps=3)
        one, two = {"state": {}}, {"state": {}}
        first = [float(policy.predict(_observation(), one)[0]) for _ in range(4)]
        assert first == [0.0, 1.0, 2.0, 3.0]  # three from the first reply, then the second reply's first
        assert float(policy.predict(_observation(), two)[0]) == 6.0  # another episode: its own queue (same socket)
        assert policy.metadata == {"policy": "replay", "action_horizon": 5} and len(server.requests) == 3


def test_a_private_address_is_refused_at_the_connection_unless_allowed(monkeypatch):
    with ReplayServer(np.zeros((5, 7), np.float32), advance=1) as server:
        monkeypatch.setenv("RLMESH_AGENT_ALLOW_PRIVATE_TARGETS", "false")
        policy = OpenPIPolicy()
        policy.load(url=server.url)
        with pytest.raises(OpenPIError, match="refused: 127.0.0.1 resolves to 127.0.0.1"):
            policy.predict(_observation(), {"state": {}})
        assert server.connections == 0  # nothing reached it


def test_a_wrong_key_is_the_servers_401_and_a_text_frame_is_quoted_short(monkeypatch):
    monkeypatch.setenv("RLMESH_AGENT_ALLOW_PRIVATE_TARGETS", "true")
    with ReplayServer(np.zeros((5, 7), np.float32), advance=1, key="right") as server:
        monkeypatch.setenv("RLMESH_ENDPOINT_KEY", "wrong")
        policy = OpenPIPolicy()
        policy.load(url=server.url)
        with pytest.raises(OpenPIError, match="HTTP 401"):
            policy.predict(_observation(), {"state": {}})
        assert server.headers[-1]["Authorization"] == "Api-Key wrong"
        with pytest.raises(OpenPIError, match="trying again"):  # backoff before the next connection
            policy.predict(_observation(), {"state": {}})


def _endpoint_request(url: str, **endpoint) -> dict:
    return {"models": [{"model": "my-pi0", "endpoint": {"url": url, "protocol": "openpi", **endpoint}}],
            "tasks": [dict(TASK)]}


@pytest.mark.django_db
def test_an_endpoint_entry_is_planned_with_its_defaults_and_its_key_never_shown(tenant_a, api):
    r = api.post("/v1/evaluations", _endpoint_request("ws://lab.example.org:8000", key="s3cret"), format="json")
    assert r.status_code == 201, r.json()
    evaluation = Evaluation.objects.get(public_id=r.json()["id"])
    workload = Workload.objects.get(evaluation=evaluation)
    assert workload.model_ref == "my-pi0" and workload.env_kwargs["cameras"] == "both"
    assert workload.model_kwargs == {"url": "ws://lab.example.org:8000", "replan_steps": 5, "image_size": 224,
                                     "timeout_seconds": 30.0}
    assert workload.model_secret and "s3cret" not in workload.model_secret
    endpoint = evaluation.config["models"][0]["endpoint"]
    assert endpoint["key"] == "***" and endpoint["replanSteps" if "replanSteps" in endpoint else "replan_steps"] == 5
    for text in (evaluation.request_raw, str(evaluation.request), str(evaluation.config), api.get(
            f"/v1/evaluations/{evaluation.public_id}").content.decode()):
        assert "s3cret" not in text
    assert '"***"' in evaluation.request_raw


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint, path", [({"url": "http://lab:8000", "protocol": "openpi"}, "models[0].endpoint.url"),
                                            ({"url": "ws://lab:8000", "protocol": "grpc"}, "models[0].endpoint.protocol"),
                                            ({"url": "ws://lab:8000", "protocol": "openpi", "replanSteps": 0},
                                             "models[0].endpoint.replanSteps")])
def test_a_bad_endpoint_is_refused_at_its_path(api, endpoint, path):
    r = api.post("/v1/evaluation-previews", {"models": [{"model": "x", "endpoint": endpoint}], "tasks": [TASK]},
                 format="json")
    assert r.status_code == 400 and path in [d["path"] for d in r.json()["error"]["details"]], r.json()


@pytest.mark.django_db
def test_the_bridge_named_as_a_model_is_refused_with_the_form_to_use(api):
    r = api.post("/v1/evaluation-previews", {"model": "prebuilt/openpi-endpoint", "tasks": [TASK]}, format="json")
    assert r.status_code == 400 and '"endpoint"' in r.json()["error"]["message"]


@needs_libero_venv
@pytest.mark.slow
@pytest.mark.live
@pytest.mark.django_db
@pytest.mark.timeout(1500)
def test_an_openpi_server_replaying_the_expert_succeeds_and_with_replan_1_gives_its_digest(tenant_a, settings,
                                                                                        tmp_path):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 10**10
    # The expert's own episode. Both runs observe the same (both cameras, the privileged state the expert reads and
    # the bridge ignores): the digest hashes what the env returned, and it is compared.
    same = {"cameras": "both", "privileged": True}
    expert = create(tenant_a, {"models": ["prebuilt/libero-expert"], "tasks": [
        {**TASK, "params": same, "recordSteps": "all"}]})
    run_all(expert)
    (reference,) = episodes(expert)
    assert reference.success, reference.error
    with reference.steps_file.open("rb") as fh:
        recorded = load_steps(fh)
    results = {}
    for replan in (1, 5):
        with ReplayServer(recorded["action"], states=recorded["obs/agent_pos"], key="k-123") as server:
            body = _endpoint_request(server.url, key="k-123", replanSteps=replan)
            body["tasks"][0]["params"] = same
            evaluation = create(tenant_a, body)
            run_all(evaluation)
            (episode,) = episodes(evaluation)
            results[replan] = (episode, list(server.requests), server.headers[-1])
    one, five = results[1][0], results[5][0]
    assert one.success and five.success, (one.error, five.error)
    assert one.trajectory_digest == reference.trajectory_digest and one.steps == reference.steps
    assert five.steps == reference.steps  # the same actions, five per call
    requests, headers = results[1][1], results[1][2]
    assert headers["Authorization"] == "Api-Key k-123"
    wire = requests[0]
    assert wire["observation/image"] == ((224, 224, 3), "uint8") and wire["observation/wrist_image"][0] == (224, 224, 3)
    assert wire["observation/state"] == ((8,), "float32") and "basket" in wire["prompt"]
    probes = 1  # the first-action check's call on the episode's first observation
    assert len(requests) == reference.steps + probes and len(results[5][1]) == -(-reference.steps // 5) + probes
    print("OPENPI", {"steps": reference.steps, "calls replan 1": len(requests), "calls replan 5": len(results[5][1]),
                     "digest equal": one.trajectory_digest == reference.trajectory_digest})
