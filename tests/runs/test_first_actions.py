"""A model's conventions are checked before an episode counts (issue 35): the first-action check's rules on plain
values, then on real servers (Pendulum in the main venv; LIBERO's expert with a fault injected, in .venv-libero):
a wrong shape or non-finite values end the workload with every episode not run and an error naming the model, the
task, ``action`` and both shapes; an unnormalised output, a constant action and a flipped gripper are warnings on
the evaluation, before its first episode; the plain models raise nothing."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from evaluations.domain.conventions import check_declared_inputs, judge_first_actions
from evaluations.models import ImageRepository, ImageVersion
from evaluations.prebuilt.catalog import ENVS_LABEL, OBSERVES_LABEL
from tests.support.execution import create, episodes, run_all
from tests.support.libero import needs_libero_venv

BOX = gym.spaces.Box(-1.0, 1.0, (7,), np.float32)
OBS = [{"agent_pos": np.full(8, i, np.float32)} for i in range(3)]
GRIPPER = {"index": 6, "open": -1}


def _judge(actions, observations=OBS, gripper=GRIPPER):
    return judge_first_actions(actions, observations[: len(actions)], BOX, who="m on e t", gripper=gripper)


def test_a_good_first_action_raises_nothing():
    actions = [np.array([0.1, -0.2, 0.3, 0.0, 0.0, 0.05 * i, -1.0], np.float32) for i in range(3)]
    findings = _judge(actions)
    assert findings.errors == [] and findings.warnings == []


def test_a_wrong_shape_and_non_finite_values_are_errors_naming_both_shapes():
    assert _judge([np.zeros(6, np.float32)]).errors == [
        "m on e t's action has shape (6,); the env's action space has shape (7,)"]
    nan = np.zeros(7, np.float32)
    nan[2] = np.nan
    assert "non-finite" in _judge([nan]).errors[0]
    assert "not numbers" in _judge([np.array(["a"] * 7)]).errors[0]


def test_out_of_bounds_pinned_constant_and_a_closed_gripper_are_warnings():
    scaled = [np.array([3.0, -2.0, 1.0, 0.5, 0.2, 0.1 * i, -10.0], np.float32) for i in range(3)]
    (out,) = [w for w in _judge(scaled).warnings if "outside" in w]
    assert "by up to 9" in out and "10× the bound" in out
    pinned = [np.array([1, -1, 1, -1, 1, -1, -1], np.float32) * (1 if i else -1) for i in range(3)]
    assert any("pinned" in w for w in _judge(pinned).warnings)
    constant = [np.array([0.1] * 6 + [-1.0], np.float32)] * 3
    assert any("the same action" in w for w in _judge(constant).warnings)
    assert not any("the same action" in w for w in _judge(constant, [OBS[0]] * 3).warnings)  # same observations
    closed = [np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.01 * i, 1.0], np.float32) for i in range(3)]
    (grip,) = _judge(closed).warnings
    assert "gripper closed from the first step on 3 of 3 init states" in grip and "action[6]" in grip
    assert _judge(closed, gripper=None).warnings == []  # an env that declares no gripper


def test_an_action_rlmesh_refuses_is_named_by_its_size_and_the_spaces_shape():
    from evaluations.domain.conventions import contract_error

    words = "model error: internal error: ValueError: invalid box value: data is 24 bytes but shape and dtype require exactly 28"
    assert contract_error(words, BOX, "m") == ("m's action has 6 values (24 bytes); the env's action space has shape "
                                               "(7,) (28 bytes)")
    assert contract_error("ValueError: tensor element count 6 is not a multiple of the space element count 7", BOX,
                          "m") == "m's action has 6 values; the env's action space has shape (7,) (7 values)"
    assert contract_error("TimeoutError: deadline", BOX, "m") is None


def test_declared_inputs_are_checked_against_the_first_observation():
    obs = {"pixels": {"image": np.zeros((256, 256, 3), np.uint8)}, "agent_pos": np.zeros(8, np.float32)}
    assert check_declared_inputs({"pixels.image": (256, 256, 3), "agent_pos": (8,)}, obs, "m") == []
    errors = check_declared_inputs({"pixels.image": (224, 224, 3), "state": (8,)}, obs, "m")
    assert "(224, 224, 3)" in errors[0] and "(256, 256, 3)" in errors[0] and "lacks" in errors[1]


def _model(namespace: str, cls: str, *, libero: bool = False) -> str:
    repo = ImageRepository.objects.create(namespace=namespace, name=cls.lower(), kind="model")
    labels = {ENVS_LABEL: "prebuilt/libero", OBSERVES_LABEL: "state,privileged"} if libero else {}
    scheme = "python+libero" if libero else "python"
    repo.current_version = ImageVersion.objects.create(
        repository=repo, digest="sha256:" + f"{abs(hash(cls)):064x}"[:64], tags=["latest"], probe_status="passed",
        source=f"{scheme}://tests.support.faulty_models:{cls}", labels=labels)
    repo.save()
    return repo.path


def _pendulum(tenant, model: str, episodes_=3):
    body = {"models": [model], "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/Pendulum-v1",
                                          "episodes": episodes_, "maxSteps": 20}]}
    evaluation = create(tenant, body)
    run_all(evaluation)
    return evaluation


@pytest.mark.django_db
def test_a_wrong_shape_ends_the_workload_before_any_episode_counts(tenant_a, api):
    evaluation = _pendulum(tenant_a, _model("a", "PendulumTwoDims"))
    assert evaluation.status == "failed"
    assert "a/pendulumtwodims on prebuilt/classic-control classic/Pendulum-v1" in evaluation.error_message
    assert "action has 2 values (8 bytes); the env's action space has shape (1,) (4 bytes)" in evaluation.error_message
    eps = episodes(evaluation)
    assert [e.status for e in eps] == ["error"] * 3 and all(e.error.startswith("not run:") for e in eps)
    assert all(e.success is None and e.reward is None and e.steps == 0 for e in eps)
    scores = api.get(f"/v1/evaluations/{evaluation.public_id}/scores").json()
    group = scores["groups"][0]
    assert group["episodes"] == 0 and group["errors"] == 3 and group["successRate"] is None, group


@pytest.mark.django_db
def test_non_finite_actions_end_the_workload(tenant_a):
    evaluation = _pendulum(tenant_a, _model("a", "PendulumNaN"), episodes_=2)
    assert evaluation.status == "failed" and "non-finite" in evaluation.error_message
    assert [e.error.startswith("not run:") for e in episodes(evaluation)] == [True, True]


@pytest.mark.django_db
@pytest.mark.parametrize("cls, words", [("PendulumTimesTen", "outside the env's bounds"),
                                        ("PendulumConstant", "the same action")])
def test_a_suspicious_convention_is_a_warning_and_the_episodes_run(tenant_a, api, cls, words):
    evaluation = _pendulum(tenant_a, _model("a", cls))
    warnings = api.get(f"/v1/evaluations/{evaluation.public_id}").json()["warnings"]
    assert any(words in w and "first" in w for w in warnings), warnings
    assert evaluation.status == "completed" and all(e.status == "completed" for e in episodes(evaluation))
    assert evaluation.logs.filter(message__contains="first-action check").exists()


@pytest.mark.django_db
def test_the_plain_heuristics_raise_nothing(tenant_a):
    evaluation = _pendulum(tenant_a, "prebuilt/classic-control-heuristics")
    assert evaluation.status == "completed" and not [w for w in evaluation.warnings if "first" in w]


@pytest.mark.django_db
def test_checking_the_first_actions_changes_no_episode(tenant_a, monkeypatch):
    """Each probe resets with the episode's own seed in a session of its own: the digests are those of a run
    without the check."""
    from evaluations.runs import loop

    checked = _pendulum(tenant_a, "prebuilt/classic-control-heuristics")
    monkeypatch.setattr(loop, "check_first_actions", lambda runner, todo: None)
    plain = _pendulum(tenant_a, "prebuilt/classic-control-heuristics")
    assert [e.trajectory_digest for e in episodes(checked)] == [e.trajectory_digest for e in episodes(plain)]


@needs_libero_venv
@pytest.mark.slow
@pytest.mark.live
@pytest.mark.django_db
@pytest.mark.timeout(1200)
def test_libero_expert_faults_are_caught_before_episode_one(tenant_a):
    """The fault table of issue 35 on real LIBERO (libero_object/9, 2 episodes each): the expert with its gripper
    flipped, with actions ×10, with a 6-dim action; the plain expert raises nothing."""
    table = {}
    for cls in ("ExpertGripperFlipped", "ExpertTimesTen", "ExpertSixDims", None):
        model = _model("a", cls, libero=True) if cls else "prebuilt/libero-expert"
        body = {"models": [model], "tasks": [{"env": "prebuilt/libero", "taskId": "libero_object/9", "episodes": 2,
                                              "seed": 0}]}
        evaluation = create(tenant_a, body)
        run_all(evaluation)
        first_finished = min(e.finished_at for e in episodes(evaluation))
        check = evaluation.logs.filter(message__startswith="first-action check:").order_by("created_at").first()
        table[cls or "plain expert"] = {
            "status": evaluation.status, "error": evaluation.error_message,
            "warnings": [w for w in evaluation.warnings if "first" in w],
            "caught before episode 1": check is not None and check.created_at <= first_finished,
            "episodes": [e.status for e in episodes(evaluation)]}
    print("FAULTS", json.dumps(table, indent=1, default=str))
    assert "the gripper closed from the first step on 2 of 2 init states" in table["ExpertGripperFlipped"]["warnings"][0]
    assert "outside the env's bounds" in table["ExpertTimesTen"]["warnings"][0]
    assert table["ExpertSixDims"]["status"] == "failed" and "6 values" in table["ExpertSixDims"]["error"]
    assert "shape (7,)" in table["ExpertSixDims"]["error"]
    assert table["ExpertSixDims"]["episodes"] == ["error", "error"]
    assert all(row["caught before episode 1"] for name, row in table.items() if name != "plain expert")
    assert table["plain expert"]["warnings"] == [] and table["plain expert"]["status"] == "completed"
