"""Size limits are counted first: a request over the workload, episode or task-id caps is refused from its counts,
before any per-model or per-task work (schema checks, reference resolution), at preview and submit, on /v1 and on
the agents API. ``bench/bench_oversized_requests.py`` measures what that saves (one model × 12,000 tasks)."""

from __future__ import annotations

import pytest

import evaluations.planning
import evaluations.planning.agent_runs
from evaluations.models import Evaluation
from tests.conftest import CARTPOLE_TASK, cartpole_request

pytestmark = pytest.mark.django_db

V1_ROUTES = ["/v1/evaluation-previews", "/v1/evaluations"]


@pytest.fixture
def no_per_task_work(monkeypatch):
    """Any schema check of the request fails the test (it would be a 500, not the 400 the counts give)."""
    def forbidden(*args, **kwargs):
        raise AssertionError("per-model or per-task work before the size limits were counted")

    monkeypatch.setattr(evaluations.planning, "validate_schema", forbidden)
    monkeypatch.setattr(evaluations.planning, "unknown_field_warnings", forbidden)
    monkeypatch.setattr(evaluations.planning.agent_runs, "_validated", forbidden)
    monkeypatch.setattr(evaluations.planning.agent_runs, "agent_unknown_field_warnings", forbidden)


def _details(r) -> list[dict]:
    assert r.status_code == 400, r.content[:500]
    return r.json()["error"]["details"]


@pytest.mark.parametrize("route", V1_ROUTES)
def test_too_many_workloads_are_refused_by_count(api, no_per_task_work, route):
    body = cartpole_request(tasks=[dict(CARTPOLE_TASK, episodes=1)] * 1001)
    assert _details(api.post(route, body, format="json")) == [
        {"path": "tasks", "message": "1 models × 1001 tasks = 1001 workloads; at most 1000 per evaluation"}]
    assert not Evaluation.objects.exists()


@pytest.mark.parametrize("route", V1_ROUTES)
def test_too_many_episodes_are_refused_by_count_with_the_model_shorthand(api, no_per_task_work, route, settings):
    settings.RLMESH_MAX_EPISODES_PER_EVALUATION = 10
    body = {"model": "prebuilt/classic-control-heuristics", "tasks": [dict(CARTPOLE_TASK, episodes=4)] * 3}
    assert _details(api.post(route, body, format="json")) == [
        {"path": "tasks", "message": "12 episodes in total; at most 10 per evaluation"}]


@pytest.mark.parametrize("route", V1_ROUTES)
def test_models_times_tasks_count_against_the_workload_cap(api, no_per_task_work, route, settings):
    settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION = 5
    body = cartpole_request(models=["prebuilt/classic-control-heuristics"] * 3, tasks=[CARTPOLE_TASK] * 2)
    assert _details(api.post(route, body, format="json"))[0]["path"] == "tasks"


def test_a_request_within_the_caps_is_planned_in_full(api, settings):
    settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION = 2
    r = api.post("/v1/evaluation-previews", cartpole_request(tasks=[CARTPOLE_TASK] * 2), format="json")
    assert r.status_code == 200 and r.json()["estimates"]["workloads"] == 2


def test_badly_typed_counts_are_left_to_the_schema_check(api):
    r = api.post("/v1/evaluation-previews", cartpole_request(tasks=[dict(CARTPOLE_TASK, episodes="many")]), format="json")
    assert _details(r) == [{"path": "tasks[0].episodes", "message": r.json()["error"]["details"][0]["message"]}]


AGENT_RUN = {"env_id": "miniwob", "model": "my-agent", "endpoint": {"url": "https://agent.example.com/v1"}}


@pytest.mark.parametrize("body,path", [
    ({**AGENT_RUN, "task_ids": [f"click-test.s{i:04d}" for i in range(1001)]}, "task_ids"),
    ({**AGENT_RUN, "task_ids": ["click-test"] * 11, "rollouts_per_example": 10_000}, "rollouts_per_example"),
])
def test_an_agent_run_over_the_caps_is_refused_by_count(api, no_per_task_work, body, path):
    assert path in [d["path"] for d in _details(api.post("/agents/evaluations/run", body, format="json"))]
    assert not Evaluation.objects.exists()


def test_a_preview_resolves_each_env_once_however_many_tasks_name_it(api):
    """Large previews within the caps stay cheap: the queries do not grow with the tasks (two per task did)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries(n_tasks: int) -> int:
        body = cartpole_request(tasks=[dict(CARTPOLE_TASK, seed=i) for i in range(n_tasks)])
        with CaptureQueriesContext(connection) as captured:
            assert api.post("/v1/evaluation-previews", body, format="json").status_code == 200
        return len(captured)

    queries(1)  # the first request of a key also records its last use
    assert queries(30) == queries(2)


def test_previews_of_one_key_share_a_budget_of_workloads_a_minute(api, tenant_a, settings):
    settings.RLMESH_PREVIEW_WORKLOADS_PER_MINUTE = 5
    two = cartpole_request(tasks=[CARTPOLE_TASK] * 2)
    codes = [api.post("/v1/evaluation-previews", two, format="json").status_code for _ in range(3)]
    assert codes == [200, 200, 429]  # 2 + 2 workloads fit in 5, 2 more do not
    refused = api.post("/v1/evaluation-previews", cartpole_request(), format="json")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "throttled" and int(refused["Retry-After"]) >= 1
    other_key = tenant_a.client(tenant_a.viewer_key).post("/v1/evaluation-previews", two, format="json")
    assert other_key.status_code == 200  # the budget is per credential
    assert api.post("/v1/evaluations", cartpole_request(), format="json").status_code == 201  # submits are not previews


def test_an_oversized_preview_is_the_400_not_a_charge_on_the_budget(api, settings):
    settings.RLMESH_PREVIEW_WORKLOADS_PER_MINUTE = 3
    oversized = cartpole_request(tasks=[dict(CARTPOLE_TASK, episodes=1)] * 1001)
    assert [api.post("/v1/evaluation-previews", oversized, format="json").status_code for _ in range(2)] == [400, 400]
    assert api.post("/v1/evaluation-previews", cartpole_request(), format="json").status_code == 200
