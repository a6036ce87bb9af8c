"""Model × env compatibility through rlmesh's adapter resolution, and the model predict smoke test."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from rlmesh._describe import _space_dict, describe

from evaluations.models import ImageRepository, ImageVersion
from evaluations.planning.adapters import SpaceUnreadable, adapter_problem, space_from_describe, synthetic_env_from_spec
from evaluations.services.probes import ProbeFailed, _smoke_model
from tests.conftest import cartpole_request
from tests.support.live import ROOT, wait_for

ENV = describe("tests.support.adapters:TaggedReach")
REACH = describe("tests.support.adapters:ReachModel")
CAMERA = describe("tests.support.adapters:CameraModel")
CLASSIC = describe("evaluations.prebuilt.envs:ClassicControl")
#: An env envelope as an untagged env records it (the prebuilt MuJoCo envs, most pushed Gymnasium envs).
UNTAGGED = {**CLASSIC, "env_tags": None}


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Box(-1, 1, (3,), np.float32),
        gym.make("CartPole-v1").observation_space,
        gym.spaces.Box(0, 255, (8, 8, 3), np.uint8),
        gym.spaces.Discrete(3, start=1),
        gym.spaces.MultiBinary(4),
        gym.spaces.MultiDiscrete([2, 3]),
        gym.spaces.Text(64),
        gym.spaces.Dict({"a": gym.spaces.Discrete(2), "b": gym.spaces.Box(-np.inf, np.inf, (2, 2))}),
        gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (1,))]),
    ],
    ids=str,
)
def test_describe_spaces_rebuild_to_the_same_space(space):
    wire = json.loads(json.dumps(describe_space := _space_dict(space), allow_nan=True))
    rebuilt = space_from_describe(wire)
    assert _space_dict(rebuilt) == describe_space
    if isinstance(space, gym.spaces.Box):
        assert rebuilt == space


def test_null_bounds_from_a_recorded_envelope_are_infinite():
    obs = CLASSIC["env_spec"]["observation_space"]  # describe writes CartPole's ±inf as null
    assert None in obs["details"]["high"]
    rebuilt = space_from_describe(obs)
    assert np.isinf(rebuilt.high[1]) and rebuilt.high[0] == pytest.approx(4.8)


def test_unknown_space_kinds_are_refused_clearly():
    with pytest.raises(SpaceUnreadable, match="graph"):
        space_from_describe({"kind": "graph", "details": {}})


def test_a_model_whose_spec_resolves_against_the_env_is_compatible():
    assert adapter_problem(REACH, ENV) is None


def test_a_model_wanting_a_camera_is_incompatible_with_a_state_only_env():
    problem = adapter_problem(CAMERA, ENV)
    assert problem and "image/primary" in problem


def test_an_env_without_tags_cannot_take_a_specd_model_but_a_spec_less_model_is_not_judged():
    assert "no adapter tags" in adapter_problem(REACH, UNTAGGED)
    heuristics = describe("evaluations.prebuilt.models:ClassicControlHeuristics")
    assert adapter_problem(heuristics, UNTAGGED) is None and adapter_problem(heuristics, CLASSIC) is None
    # classic control publishes its own tags: a spec'd model is judged by the roles it reads
    assert 'needs state role "proprio/eef_pos" but the env offers ["x/classic/cartpole_state"]' in adapter_problem(REACH, CLASSIC)
    assert adapter_problem(REACH, {}) is None  # spaces never recorded: decided by the first predict


def _pushed(namespace: str, name: str, kind: str, envelope: dict, n: str) -> ImageVersion:
    repo = ImageRepository.objects.create(namespace=namespace, name=name, kind=kind)
    version = ImageVersion.objects.create(
        repository=repo, digest="sha256:" + n * 64, source=f"oci://127.0.0.1:5000/{namespace}/{name}@sha256:{n * 64}",
        tags=["latest"], probe_status="passed", describe=envelope,
    )
    repo.current_version = version
    repo.save()
    return version


@pytest.mark.django_db
def test_preview_and_submit_refuse_an_incompatible_pair_naming_both_sides(api):
    _pushed("a", "reach", "env", ENV, "1")
    _pushed("a", "camera-policy", "model", CAMERA, "2")
    _pushed("a", "reach-policy", "model", REACH, "3")
    body = {
        "models": ["a/reach-policy", "a/camera-policy"],
        "tasks": [{"env": "a/reach", "taskId": "reach", "episodes": 2}],
    }
    for url in ("/v1/evaluation-previews", "/v1/evaluations"):
        r = api.post(url, body, format="json")
        assert r.status_code == 400, r.content
        details = r.json()["error"]["details"]
        assert [d["path"] for d in details] == ["models[1]"]
        assert "a/camera-policy" in details[0]["message"] and "a/reach" in details[0]["message"]
        assert "image/primary" in details[0]["message"]
    body["models"] = ["a/reach-policy"]
    assert api.post("/v1/evaluation-previews", body, format="json").status_code == 200
    # A spec'd model on classic control, whose tags offer no end-effector: refused before any rollout.
    r = api.post("/v1/evaluation-previews", {**cartpole_request(), "models": ["a/reach-policy"]}, format="json")
    assert r.status_code == 400 and "proprio/eef_pos" in r.json()["error"]["details"][0]["message"]


def test_synthesized_observation_offers_exactly_the_spec_inputs():
    env, tags = synthetic_env_from_spec(REACH["model_spec"])
    assert set(env.observation_space.spaces) == {"pos_0", "text"}
    assert env.action_space.shape == (3,)
    with pytest.raises(SpaceUnreadable, match="dim"):
        synthetic_env_from_spec({"input": {"q": {"type": "state", "components": [{"role": "proprio/joint_pos"}]}},
                                 "output": {"components": [{"role": "action/joint_pos", "dim": 7}]}})


def _serve(target: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlmesh.serve", target, "--address", f"127.0.0.1:{port}"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    import socket

    def up():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_for(up, timeout=30)
    return proc


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_probe_smoke_tests_a_specd_model_with_one_predict():
    port = _free_port()
    proc = _serve("tests.support.adapters:ReachModel", port)
    try:
        log: list[str] = []
        _smoke_model(f"127.0.0.1:{port}", REACH["model_spec"], log)
        assert log[-1].startswith("ok    predict smoke test") and "action shape [3]" in log[-1]
    finally:
        proc.kill()
        proc.wait()


def test_a_model_whose_predict_crashes_fails_the_probe_with_its_error():
    port = _free_port()
    proc = _serve("tests.support.adapters:CrashingReachModel", port)
    try:
        with pytest.raises(ProbeFailed, match="weights not loaded"):
            _smoke_model(f"127.0.0.1:{port}", REACH["model_spec"], [])
    finally:
        proc.kill()
        proc.wait()


def _label(envelope: dict) -> dict:
    return {"dev.rlmesh.describe": json.dumps(envelope)}


def test_probe_admission_fails_a_spec_that_does_not_resolve_and_only_warns_on_a_tagless_env():
    from evaluations.services.probes import _admission_checks

    broken = json.loads(json.dumps(REACH))
    broken["model_spec"]["input"]["pos"]["type"] = "hologram"
    with pytest.raises(ProbeFailed, match="does not resolve.*hologram"):
        _admission_checks(_label(broken), [])
    log: list[str] = []
    _admission_checks(_label(UNTAGGED), log)
    assert any(line.startswith("warn") and "only models without a model_spec" in line for line in log)
    log = []
    _admission_checks(_label(CLASSIC), log)  # the catalog's env carries EnvTags: rlmesh's own rules pass it whole
    assert not any(line.startswith("warn") for line in log)
    log = []
    _admission_checks(_label(REACH), log)
    assert not any(line.startswith("warn") for line in log)


@pytest.mark.django_db
def test_a_pushed_spec_less_model_on_a_tagged_env_is_warned_about_no_adapter(api):
    """rlmesh refuses a model with spec=None on an env that publishes tags (classic control does, for check-image);
    the envelope cannot say whether the model declared NO_ADAPTER, so the preview says what it needs."""
    heuristics = describe("evaluations.prebuilt.models:ClassicControlHeuristics")
    assert heuristics["model_spec"] is None  # NO_ADAPTER is not recorded
    _pushed("a", "my-policy", "model", heuristics, "4")
    warnings = api.post("/v1/evaluation-previews", {**cartpole_request(), "models": ["a/my-policy"]}, format="json").json()["warnings"]
    assert any("a/my-policy declares no model_spec" in w and "spec=NO_ADAPTER" in w for w in warnings), warnings
    prebuilt = api.post("/v1/evaluation-previews", cartpole_request(), format="json").json()["warnings"]
    assert not any("NO_ADAPTER" in w for w in prebuilt)  # the prebuilt models declare it
