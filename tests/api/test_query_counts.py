"""Query counts of the /v1 list and detail endpoints, pinned (STYLE habit 2), and independent of the number of rows:
each endpoint is measured with a small world and again after it grew.

Every authenticated request starts with 1 query: the API key with its organization, its creator and the creator's
membership (an API key's role is capped by its creator's). ``last_used_at`` is written at most once a minute, so a
first request warms it before counting.
"""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from evaluations.models import Episode, Evaluation, EvaluationLog, ImageRepository, ImageVersion, Workload
from evaluations.planning import plan_evaluation
from evaluations.runs.lifecycle import create_evaluation
from tests.conftest import cartpole_request

pytestmark = pytest.mark.django_db

AUTH = 1  # the API key with its organization, creator and the creator's membership (one statement)


@pytest.fixture
def evaluation(tenant_a, api):
    body = cartpole_request()
    ev = create_evaluation(plan=plan_evaluation(body, organization=tenant_a.org), raw_body=json.dumps(body),
                           organization=tenant_a.org, creator=tenant_a.user)
    api.get("/v1/me")  # writes last_used_at once
    return ev


def add_evaluations(tenant, n: int) -> None:
    Evaluation.objects.bulk_create(
        Evaluation(organization=tenant.org, creator=tenant.user, name=f"e{i}", request_raw="{}", request={},
                   status="completed", total_episodes=10, completed_episodes=10, tags={"team": "x"})
        for i in range(n)
    )


def add_workloads(evaluation: Evaluation, n: int) -> None:
    template = evaluation.workloads.first()
    start = evaluation.workloads.count()
    Workload.objects.bulk_create(
        Workload(evaluation=evaluation, index=start + i, model_ref=template.model_ref, model_version=template.model_version,
                 env_ref=template.env_ref, env_version=template.env_version, task_id=f"classic/T{i}", episodes=10)
        for i in range(n)
    )


def add_episodes(evaluation: Evaluation, n: int) -> None:
    workloads = list(evaluation.workloads.all())
    start = evaluation.episodes.count()
    Episode.objects.bulk_create(
        Episode(evaluation=evaluation, workload=workloads[i % len(workloads)], index=start + i, seed=i, status="completed",
                success=i % 3 == 0, success_source="criterion", reward=float(i), steps=10, stop_condition="time_limit",
                started_at=timezone.now(), wall_ms=12.0, video_meta={"bytes": 10} if i % 2 else {},
                video=f"episodes/x/{i}.mp4" if i % 2 else "")
        for i in range(n)
    )


def add_logs(evaluation: Evaluation, n: int) -> None:
    EvaluationLog.objects.bulk_create(EvaluationLog(evaluation=evaluation, message=f"line {i}") for i in range(n))


def add_images(tenant, n: int) -> None:
    start = ImageRepository.objects.filter(namespace=tenant.org.slug).count()
    for i in range(start, start + n):
        repo = ImageRepository.objects.create(namespace=tenant.org.slug, name=f"env-{i}", kind="env")
        versions = ImageVersion.objects.bulk_create(
            ImageVersion(repository=repo, digest=f"sha256:{i:032d}{j:032d}", source="python://x:Y", tags=[f"v{j}"],
                         scenarios=[{"id": "classic/CartPole-v1", "name": "CartPole"}])
            for j in range(3)
        )
        repo.current_version = versions[-1]
        repo.save()


def count(api, django_assert_num_queries, path: str, queries: int) -> dict:
    with django_assert_num_queries(queries):
        r = api.get(path)
    assert r.status_code == 200, r.content
    return r.json()


def test_evaluation_list(api, tenant_a, evaluation, django_assert_num_queries):
    add_evaluations(tenant_a, 25)
    count(api, django_assert_num_queries, "/v1/evaluations?limit=100", AUTH + 1)  # the page with its creators
    add_evaluations(tenant_a, 25)
    page = count(api, django_assert_num_queries, "/v1/evaluations?limit=100&status=completed&tag=team:x", AUTH + 1)
    assert len(page["items"]) == 50
    page = count(api, django_assert_num_queries, "/v1/evaluations?limit=10", AUTH + 1)
    count(api, django_assert_num_queries, f"/v1/evaluations?limit=10&cursor={page['nextCursor']}", AUTH + 1)


def test_evaluation_list_reads_no_request_or_config(api, tenant_a, evaluation, django_assert_num_queries):
    """A list page's summaries need neither the request as received nor the effective config, which grow with
    the number of workloads: the page query does not read them."""
    with django_assert_num_queries(AUTH + 1) as queries:
        assert len(api.get("/v1/evaluations").json()["items"]) == 1
    page_sql = queries.captured_queries[-1]["sql"]
    assert '"public_id"' in page_sql
    for column in ("request_raw", "request", "config", "endpoint_key", "judge_key"):
        assert f'"evaluations_evaluation"."{column}"' not in page_sql, column


def test_evaluation_detail(api, evaluation, django_assert_num_queries):
    url = f"/v1/evaluations/{evaluation.public_id}"
    add_workloads(evaluation, 5)
    add_episodes(evaluation, 20)
    count(api, django_assert_num_queries, url, AUTH + 2)  # the evaluation with its creator; workloads with versions and counts
    add_workloads(evaluation, 45)
    body = count(api, django_assert_num_queries, url, AUTH + 2)
    assert len(body["workloads"]) == 51


def test_evaluation_detail_reads_no_image_describe_output(api, evaluation, django_assert_num_queries):
    """The workloads query takes each image version's digest, not its describe output, probe log or labels (large
    JSON decoded for nothing on every poll)."""
    with django_assert_num_queries(AUTH + 2) as queries:
        assert api.get(f"/v1/evaluations/{evaluation.public_id}").status_code == 200
    (workloads_sql,) = [q["sql"] for q in queries.captured_queries if 'FROM "evaluations_workload"' in q["sql"]]
    assert '"digest"' in workloads_sql
    for column in ("describe", "probe_log", "labels", "checkpoints"):
        assert f'."{column}"' not in workloads_sql, column


def test_episodes_page(api, evaluation, django_assert_num_queries):
    url = f"/v1/evaluations/{evaluation.public_id}/episodes?limit=100"
    add_episodes(evaluation, 20)
    count(api, django_assert_num_queries, url, AUTH + 2)  # the evaluation; the page with its workloads
    add_workloads(evaluation, 10)
    add_episodes(evaluation, 200)
    page = count(api, django_assert_num_queries, url, AUTH + 2)
    assert len(page["items"]) == 100 and page["nextCursor"]
    count(api, django_assert_num_queries, f"{url}&cursor={page['nextCursor']}&success=true", AUTH + 2)


def test_logs_page(api, evaluation, django_assert_num_queries):
    url = f"/v1/evaluations/{evaluation.public_id}/logs"
    add_logs(evaluation, 10)
    count(api, django_assert_num_queries, url, AUTH + 2)  # the evaluation; the page
    add_logs(evaluation, 1500)
    page = count(api, django_assert_num_queries, url, AUTH + 2)
    assert len(page["items"]) == 1000 and page["nextCursor"]


@pytest.mark.parametrize("group_by", ["task", "model"])
def test_scores(api, evaluation, django_assert_num_queries, group_by):
    url = f"/v1/evaluations/{evaluation.public_id}/scores?groupBy={group_by}"
    add_episodes(evaluation, 20)
    count(api, django_assert_num_queries, url, AUTH + 2)  # the evaluation; one aggregate over its episodes
    add_workloads(evaluation, 10)
    add_episodes(evaluation, 500)
    body = count(api, django_assert_num_queries, url, AUTH + 2)
    assert sum(g["episodes"] for g in body["groups"]) == 520


def test_metrics(api, evaluation, django_assert_num_queries):
    url = f"/v1/evaluations/{evaluation.public_id}/metrics"
    add_episodes(evaluation, 20)
    count(api, django_assert_num_queries, url, AUTH + 3)  # the evaluation; episodes; shards
    add_episodes(evaluation, 500)
    assert count(api, django_assert_num_queries, url, AUTH + 3)["episodes"] == 520


def test_image_list(api, tenant_a, evaluation, django_assert_num_queries):
    add_images(tenant_a, 3)
    count(api, django_assert_num_queries, "/v1/images", AUTH + 2)  # repositories with current versions; all versions
    add_images(tenant_a, 12)
    body = count(api, django_assert_num_queries, "/v1/images", AUTH + 2)
    assert sum(1 for i in body["items"] if i["reference"].startswith("a/")) == 15
    count(api, django_assert_num_queries, "/v1/images?kind=env", AUTH + 2)
