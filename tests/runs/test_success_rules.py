"""What success means when the env reports no flag (field case: a perfect CartPole policy scored 0 % on a pushed
image, because criteria lived only in the prebuilt catalog and the fallback ``terminated`` means the pole fell).

Criteria travel with the env (its describe envelope's variant metadata or a ``dev.rlmesh.platform.success`` label,
read by the probe into the version's catalog) and can be given per task in the request; when nothing defines success
the episode's success is null (source ``undefined``), the rate is null and the preview warns. Episodes here are real:
the local runtime serves the env source of a "pushed" version exactly as the catalog image serves it.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from rlmesh._describe import describe

from evaluations.models import ImageRepository, ImageVersion
from evaluations.reports.scores import evaluation_scores
from evaluations.services.probes import ProbeFailed, scenario_catalog
from tests.conftest import cartpole_request
from tests.support.execution import create, episodes, run_all

pytestmark = pytest.mark.django_db

#: The describe label the catalog's rlmesh-classic-control image carries (containers/build-images.sh).
LABEL = describe("evaluations.prebuilt.envs:ClassicControl")


def pushed_env(namespace: str, name: str, scenarios: list[dict], labels: dict | None = None) -> str:
    """A passed env version as the probe records a pushed rlmesh-classic-control image (served by the local runtime
    from the same source the image runs)."""
    repo = ImageRepository.objects.create(namespace=namespace, name=name, kind="env")
    repo.current_version = ImageVersion.objects.create(
        repository=repo, digest="sha256:" + "7" * 64, tags=["latest"], source="python://evaluations.prebuilt.envs:ClassicControl",
        scenarios=scenarios, labels=labels or {}, describe=LABEL, probe_status="passed",
    )
    repo.save()
    return f"{namespace}/{name}"


def cartpole_on(env: str, **task) -> dict:
    return {"models": ["prebuilt/classic-control-heuristics"],
            "tasks": [{"env": env, "taskId": "classic/CartPole-v1", "episodes": 2, **task}]}


def test_the_catalog_image_declares_its_criteria_and_the_probe_records_them():
    log: list[str] = []
    scenarios = {s["id"]: s for s in scenario_catalog(LABEL, {}, log)}
    assert scenarios["classic/CartPole-v1"]["success"] == {
        "kind": "survived", "steps": 500, "description": "the pole stayed up until the time limit (500 steps)"}
    assert scenarios["classic/Pendulum-v1"]["success"]["kind"] == "return_at_least"
    assert "ok    success criteria: 5 of 5 scenarios declare one" in log


def test_a_success_label_overrides_the_variants_and_a_bad_one_fails_the_probe():
    label = {"dev.rlmesh.platform.success": json.dumps({"classic/CartPole-v1": {"kind": "survived", "steps": 200}})}
    log: list[str] = []
    scenarios = {s["id"]: s for s in scenario_catalog(LABEL, label, log)}
    assert scenarios["classic/CartPole-v1"]["success"] == {"kind": "survived", "steps": 200}
    assert scenarios["classic/MountainCar-v0"]["success"]["kind"] == "terminated"  # the variant's own
    for bad, reason in [("[]", "must be a JSON object"), ("{", "is not JSON"),
                        ('{"classic/CartPole-v1": {"kind": "vibes"}}', "classic/CartPole-v1.kind must be one of")]:
        with pytest.raises(ProbeFailed, match=reason):
            scenario_catalog(LABEL, {"dev.rlmesh.platform.success": bad}, [])


def test_a_perfect_policy_scores_100_percent_on_a_pushed_catalog_image(tenant_a):
    env = pushed_env("a", "my-env", scenario_catalog(LABEL, {}, []))
    evaluation = create(tenant_a, cartpole_on(env))
    assert evaluation.config["tasks"][0]["successCriterion"]["declaredBy"] == "env"
    run_all(evaluation)
    assert [(e.steps, e.success, e.success_source) for e in episodes(evaluation)] == [(500, True, "criterion")] * 2
    assert evaluation_scores(evaluation, "task")["groups"][0]["successRate"] == 1.0


def test_when_nothing_defines_success_the_rate_is_null_and_the_preview_warns(tenant_a, api):
    bare = [{k: v for k, v in s.items() if k != "success"} for s in scenario_catalog(LABEL, {}, [])]
    env = pushed_env("a", "bare-env", bare)
    preview = api.post("/v1/evaluation-previews", cartpole_on(env), format="json").json()
    assert any(w.startswith("tasks[0]: nothing defines success for a/bare-env classic/CartPole-v1") and
               'success rate is null ("success undefined")' in w for w in preview["warnings"]), preview["warnings"]
    evaluation = create(tenant_a, cartpole_on(env))
    run_all(evaluation)
    eps = episodes(evaluation)
    # 500/500 steps, pole up all along: no `terminated` guess (it would say the pole fell), no verdict at all
    assert [(e.steps, e.terminated, e.success, e.success_source) for e in eps] == [(500, False, None, "undefined")] * 2
    (group,) = evaluation_scores(evaluation, "task")["groups"]
    assert group["successRate"] is None and group["successUndefined"] == 2 and group["meanReward"] == 500.0
    web = Client()
    web.force_login(tenant_a.user)
    overview = web.get(f"/evaluations/{evaluation.public_id}").content.decode()
    assert 'class="success-undefined"' in overview and ">undefined</span>" in overview
    # the same request with a criterion of its own: defined, no warning
    body = cartpole_on(env, successCriterion={"kind": "survived", "steps": 500})
    preview = api.post("/v1/evaluation-previews", body, format="json").json()
    assert not any("nothing defines success" in w for w in preview["warnings"])
    assert preview["config"]["tasks"][0]["successCriterion"] == {"kind": "survived", "steps": 500, "declaredBy": "request"}


def test_a_request_criterion_is_checked_with_paths_and_decides_before_the_env(tenant_a, api):
    body = cartpole_request()
    body["tasks"][0]["successCriterion"] = {"kind": "return_at_least"}
    r = api.post("/v1/evaluation-previews", body, format="json")
    assert r.status_code == 400
    assert r.json()["error"]["details"] == [
        {"path": "tasks[0].successCriterion.threshold", "message": "is required for return_at_least: a finite number"}]
    body["tasks"][0]["successCriterion"] = "survived"
    assert api.post("/v1/evaluation-previews", body, format="json").json()["error"]["details"][0]["path"] == "tasks[0].successCriterion"
    # a stricter criterion than the catalog's: every episode of the perfect policy fails it (return 500 < 501)
    body["tasks"][0].update(successCriterion={"kind": "return_at_least", "threshold": 501}, episodes=1)
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    assert [(e.success, e.success_source) for e in episodes(evaluation)] == [(False, "criterion")]


@pytest.mark.parametrize("task_id,scenario", [("classic/0", "classic/CartPole-v1"), ("classic/4", "classic/LunarLander-v3")])
def test_scenario_indexes_resolve_to_the_catalog_position_and_are_recorded_by_name(api, task_id, scenario):
    """Field case: the official client's ``scenario_tasks(..., tasks=[0])`` builds ``classic/0``."""
    body = cartpole_request()
    body["tasks"][0]["taskId"] = task_id
    r = api.post("/v1/evaluations", body, format="json")
    assert r.status_code == 201, r.content
    detail = api.get(f"/v1/evaluations/{r.json()['id']}").json()
    assert detail["config"]["tasks"][0]["taskId"] == scenario and detail["config"]["tasks"][0]["requestedTaskId"] == task_id
    assert detail["request"]["tasks"][0]["taskId"] == task_id  # the request stays as sent
    assert any(f'"{task_id}" is scenario {scenario}' in w for w in r.json()["warnings"])


def test_scenario_index_errors_say_how_many_there_are(api):
    for task_id, message in [("classic/5", "classic has 5 scenarios, indexes 0–4"),
                             ("libero_goal/0", 'it has no benchmark "libero_goal"')]:
        body = cartpole_request()
        body["tasks"][0]["taskId"] = task_id
        r = api.post("/v1/evaluation-previews", body, format="json")
        assert r.status_code == 400 and message in r.json()["error"]["details"][0]["message"], r.json()


def test_an_exact_scenario_id_wins_over_an_index(tenant_a, api):
    env = pushed_env("a", "libero-like", [
        {"id": "libero_goal/1", "name": "open the drawer", "params": {"env_id": "MountainCar-v0"}},
        {"id": "libero_goal/0", "name": "put the bowl", "params": {"env_id": "CartPole-v1"}},
    ])
    body = {"models": ["prebuilt/random"], "tasks": [{"env": env, "taskId": "libero_goal/0", "episodes": 1}]}
    config = api.post("/v1/evaluation-previews", body, format="json").json()["config"]
    assert config["tasks"][0]["taskId"] == "libero_goal/0" and "requestedTaskId" not in config["tasks"][0]
    assert config["tasks"][0]["makeKwargs"] == {"env_id": "CartPole-v1"}
