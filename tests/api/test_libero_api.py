"""prebuilt/libero through the API: its catalog, refusals with the bad field's path, the make kwargs the planner
records per model (cameras, privileged state, perturbation) and the memory cap on parallel workers."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def _request(model="prebuilt/random", **task) -> dict:
    return {"models": [model], "tasks": [{"env": "prebuilt/libero", "taskId": "libero_object/0", "episodes": 2, **task}]}


def test_images_list_all_130_scenarios_with_instructions(api):
    env = api.get("/v1/images/prebuilt/libero").json()
    scenarios = {s["id"]: s for s in env["scenarios"]}
    assert len(scenarios) == 130 and sum(i.startswith("libero_90/") for i in scenarios) == 90
    assert scenarios["libero_goal/0"]["instruction"] == "open the middle drawer of the cabinet"
    assert scenarios["libero_goal/0"]["successCriterion"]["kind"] == "env_flag"


@pytest.mark.parametrize(("task_id", "message"), [
    ("libero_goal/10", "libero_goal has 10 scenarios, indexes 0–9"),
    ("libero_100/0", 'it has no benchmark "libero_100"'),
    ("libero_goal/x", 'unknown scenario "libero_goal/x"'),
])
def test_an_unknown_suite_or_index_names_the_task_id(api, task_id, message):
    r = api.post("/v1/evaluation-previews", _request(taskId=task_id), format="json")
    assert r.status_code == 400
    (detail,) = r.json()["error"]["details"]
    assert detail["path"] == "tasks[0].taskId" and message in detail["message"], detail


def test_random_renders_no_camera_and_the_expert_gets_privileged_state(api):
    from evaluations.models import Evaluation

    body = {"models": ["prebuilt/random", "prebuilt/libero-expert"],
            "tasks": [{"env": "prebuilt/libero", "taskId": "libero_object/0", "episodes": 2, "record": "all"}]}
    r = api.post("/v1/evaluations", body, format="json")
    assert r.status_code == 201, r.content
    kwargs = {w.model_ref: w.env_kwargs for w in Evaluation.objects.get(public_id=r.json()["id"]).workloads.all()}
    assert kwargs["prebuilt/random"] == {"suite": "libero_object", "task_index": 0, "cameras": "none"}
    assert kwargs["prebuilt/libero-expert"] == {"suite": "libero_object", "task_index": 0, "cameras": "none",
                                                "privileged": True}


def test_the_expert_acts_only_on_libero(api):
    body = {"models": ["prebuilt/libero-expert"],
            "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 1}]}
    (detail,) = api.post("/v1/evaluation-previews", body, format="json").json()["error"]["details"]
    assert detail["path"] == "models[0]" and "acts only in prebuilt/libero" in detail["message"]


def test_libero_pro_perturbations_reach_the_env_and_unsupported_ones_are_refused(api):
    from evaluations.models import Evaluation

    r = api.post("/v1/evaluations", _request(perturbation="swap"), format="json")
    assert r.status_code == 201, r.content
    assert Evaluation.objects.get(public_id=r.json()["id"]).workloads.get().env_kwargs["perturbation"] == "swap"
    r = api.post("/v1/evaluation-previews", _request(taskId="libero_90/0", perturbation="language"), format="json")
    (detail,) = r.json()["error"]["details"]
    assert detail["path"] == "tasks[0].perturbation" and "does not ship language" in detail["message"]
    r = api.post("/v1/evaluation-previews", _request(params={"perturbation": "swap"}), format="json")
    assert r.json()["error"]["details"][0]["path"] == "tasks[0].params.perturbation"
    r = api.post("/v1/evaluation-previews", _request(env="prebuilt/mujoco", taskId="locomotion/Hopper-v5",
                                                     perturbation="swap"), format="json")
    assert "needs an env with a `perturbation` make parameter" in r.json()["error"]["details"][0]["message"]


def test_workers_beyond_the_hosts_memory_are_capped_and_the_preview_says_so(api, settings):
    settings.RLMESH_WORKER_HOST_MEMORY_BYTES = 4 * 2**30  # 75 % of 4 GiB holds two 1.5 GiB LIBERO envs
    r = api.post("/v1/evaluation-previews", _request(episodes=8, workers=4), format="json")
    assert r.status_code == 200, r.content
    body = r.json()
    (warning,) = [w for w in body["warnings"] if "capped" in w]
    assert warning.startswith("tasks[0].workers: 4 prebuilt/libero envs") and "capped at 2 concurrent envs" in warning
    assert {w["workers"] for w in body["workloads"]} == {2}
    r = api.post("/v1/evaluation-previews", _request(episodes=8, workers=2), format="json")
    assert not [w for w in r.json()["warnings"] if "capped" in w]


def test_group_by_scenario_keeps_index_zero_of_two_suites_apart(api):
    """LIBERO's task ids end in an index, which names a task only within its suite: libero_object/0 and
    libero_spatial/0 are two scenarios (seen merged in a clean-clone run), while Meta-World's names stay shared."""
    from evaluations.domain.scoring import split_task_id
    from evaluations.models import Episode, Evaluation

    body = {"models": ["prebuilt/random"],
            "tasks": [{"env": "prebuilt/libero", "taskId": t, "episodes": 1} for t in ("libero_object/0", "libero_spatial/0")]}
    r = api.post("/v1/evaluations", body, format="json")
    assert r.status_code == 201, r.content
    evaluation = Evaluation.objects.get(public_id=r.json()["id"])
    for workload in evaluation.workloads.all():
        Episode.objects.create(evaluation=evaluation, workload=workload, index=0, seed=0, status="completed",
                               reward=0.0, success=False, steps=280, success_source="env")
    groups = api.get(f"/v1/evaluations/{r.json()['id']}/scores?groupBy=scenario").json()["groups"]
    assert sorted(g["key"]["scenario"] for g in groups) == ["libero_object/0", "libero_spatial/0"]
    assert all(g["episodes"] == 1 for g in groups)
    assert split_task_id("mt10/reach-v3") == ("mt10", "reach-v3") and split_task_id("classic/CartPole-v1")[1] == "CartPole-v1"


def test_the_migration_gives_index_scenarios_their_task_id(api):
    from importlib import import_module

    from django.apps import apps

    from evaluations.models import Evaluation, Workload

    r = api.post("/v1/evaluations", _request(), format="json")
    workload = Evaluation.objects.get(public_id=r.json()["id"]).workloads.get()
    Workload.objects.filter(pk=workload.pk).update(scenario="0")  # as planned before the rule
    import_module("evaluations.migrations.0016_index_scenarios").forwards(apps, None)
    workload.refresh_from_db()
    assert workload.scenario == "libero_object/0"


def test_the_estimate_uses_liberos_measured_pace_and_its_memory_cap(api, settings):
    """LIBERO's pace label (5 s start, 0.4 s reset, 95 steps/s, 3.2 with images, 0.15 s a video frame) and at most
    floor(0.75 × host memory / 1.5 GiB) env servers at once: examples/libero.json was estimated at 88 s before, and
    took 222–264 s on a 24 GB host."""
    import json

    from evaluations.models import WorkerProcess
    from tests.support.live import ROOT

    settings.RLMESH_WORKER_HOST_MEMORY_BYTES = 4 * 2**30  # 0.75 × 4 GiB / 1.5 GiB: 2 envs per host
    for i in range(12):  # three hosts of four pool processes each
        WorkerProcess.objects.create(identity=f"host-{i % 3}:{i}", hostname=f"host-{i % 3}", pid=i + 1)
    body = json.loads((ROOT / "examples" / "libero.json").read_text())
    est = api.post("/v1/evaluation-previews", body, format="json").json()["estimates"]
    per_workload = 5.0 + 3 * 0.4 + 3 * 280 / 95.0 + 1 * 280 * 0.15  # 8 workloads, one shard each
    assert est["estimatedSecondsUpperBound"] == pytest.approx(8 * per_workload / 6, abs=0.1)  # 3 hosts × 2 envs
    body["models"] = ["prebuilt/random"]
    body["tasks"] = body["tasks"][:1]
    body["tasks"][0]["record"] = "none"
    one = api.post("/v1/evaluation-previews", body, format="json").json()["estimates"]
    assert one["estimatedSecondsUpperBound"] == pytest.approx(5.0 + 3 * 0.4 + 3 * 280 / 95.0, abs=0.1)


def test_a_workload_that_reads_images_is_estimated_at_the_rendered_pace(settings):
    from types import SimpleNamespace

    from evaluations.planning.plan import _workload_seconds
    from evaluations.prebuilt.catalog import PACE_LABEL

    version = SimpleNamespace(labels={PACE_LABEL: '{"stepsPerSecond": 95, "imageStepsPerSecond": 3.2, "bogus": 1}'})
    task = SimpleNamespace(env=SimpleNamespace(version=version), shards=[(0, 1)], episodes=1, step_limit=320,
                           recorded_episodes=0)
    state = _workload_seconds(SimpleNamespace(task=task, env_kwargs={"cameras": "none"}))
    images = _workload_seconds(SimpleNamespace(task=task, env_kwargs={"cameras": "both"}))
    assert state == pytest.approx(320 / 95) and images == pytest.approx(100.0)
    version.labels = {PACE_LABEL: "not json"}  # an undeclared pace: the settings' sustained steps/s
    assert _workload_seconds(SimpleNamespace(task=task, env_kwargs={})) == pytest.approx(
        320 / settings.RLMESH_ESTIMATED_STEPS_PER_SECOND)


@pytest.mark.parametrize(("task_id", "message"), [
    ("libero_100/0", "(benchmarks: libero_spatial (10), libero_object (10), libero_goal (10), libero_10 (10), libero_90 (90))"),
    ("LIBERO_GOAL/0", 'scenario ids are case-sensitive; did you mean "libero_goal/0"?'),
    ("Libero_Goal/12", 'did you mean "libero_goal/12"?'),
    ("libero_goal/-1", "indexes 0–9 (indexes count from 0)"),
    ("libero_goal/01", "indexes 0–9 (write the index without leading zeros)"),
])
def test_a_mistyped_libero_task_id_says_what_would_be_right(api, task_id, message):
    r = api.post("/v1/evaluation-previews", _request(taskId=task_id), format="json")
    (detail,) = r.json()["error"]["details"]
    assert r.status_code == 400 and detail["path"] == "tasks[0].taskId" and message in detail["message"], detail


def test_max_steps_above_the_suites_own_cap_is_warned_not_silently_kept(api):
    r = api.post("/v1/evaluation-previews", _request(maxSteps=1000), format="json")
    assert r.status_code == 200
    assert any(w.startswith("tasks[0].maxSteps: 1000 is above the 280 steps libero_object/0 ends its episodes at")
               for w in r.json()["warnings"]), r.json()["warnings"]
    r = api.post("/v1/evaluation-previews", _request(maxSteps=200), format="json")
    assert not any("is above the" in w for w in r.json()["warnings"])
    # below the suite's cap: the success flag loses its later chances (planning.horizons)
    assert any("200 is below the 280 steps" in w and "biased low" in w for w in r.json()["warnings"])
