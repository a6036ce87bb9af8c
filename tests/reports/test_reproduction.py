"""Published numbers (/v1/published-scores, the catalog's rows) and the reproduction verdict on every score row of a
model that has one: /v1 scores, the dashboard's evaluation and comparison pages, the exported bundle's sidecar."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from evaluations.models import Episode, Evaluation, PublishedScore
from evaluations.models.published import model_key
from evaluations.planning import plan_evaluation
from evaluations.prebuilt.published import PUBLISHED
from evaluations.reports.reproduction import reproduction_rows
from evaluations.runs.lifecycle import create_evaluation
from evaluations.services.published_scores import sync_published

pytestmark = pytest.mark.django_db


def libero_run(tenant, model: str, successes: int, episodes: int, task: str = "libero_spatial/0") -> Evaluation:
    """An evaluation of ``model`` on one LIBERO task whose episodes are recorded as done: ``successes`` of them won."""
    body = {"models": [model], "tasks": [{"env": "prebuilt/libero", "taskId": task, "episodes": episodes}]}
    evaluation = create_evaluation(plan=plan_evaluation(body, organization=tenant.org), raw_body=json.dumps(body),
                                   organization=tenant.org, creator=tenant.user)
    workload = evaluation.workloads.get()
    Episode.objects.bulk_create(
        Episode(evaluation=evaluation, workload=workload, index=i, seed=i, status="completed", success=i < successes,
                success_source="env", reward=float(i < successes), steps=100, stop_condition="terminated",
                started_at=timezone.now(), wall_ms=1.0) for i in range(episodes))
    Evaluation.objects.filter(pk=evaluation.pk).update(completed_episodes=episodes, status="completed")
    return evaluation


def test_the_catalog_carries_the_papers_numbers_with_their_sources(api):
    sync_published()
    sync_published()  # idempotent
    rows = {(r["model"], r["benchmark"]): r for r in api.get("/v1/published-scores").json()["items"]}
    assert len(rows) == len(PUBLISHED) == 28
    smolvla = rows[("prebuilt/smolvla/libero", "libero_10")]
    assert smolvla["successRate"] == 0.71 and "2506.01844" in smolvla["source"] and smolvla["scope"] == "catalog"
    assert rows[("pi05", "libero_spatial")]["successRate"] == 0.988 and "openpi" in rows[("pi05", "libero_spatial")]["source"]
    assert rows[("prebuilt/libero-expert", "libero_goal")]["successRate"] == 1.0


def test_a_stale_catalog_row_goes_and_a_changed_one_is_rewritten_but_an_organizations_stays(tenant_a):
    sync_published()
    PublishedScore.objects.create(builtin=True, model="retired", benchmark="libero_goal", success_rate=0.5, source="x")
    PublishedScore.objects.filter(builtin=True, model="pi0", benchmark="libero_goal").update(success_rate=0.1)
    own = PublishedScore.objects.create(organization=tenant_a.org, model="pi0", benchmark="libero_goal",
                                        success_rate=0.7, source="our rerun")
    sync_published()
    assert not PublishedScore.objects.filter(model="retired").exists()
    assert PublishedScore.objects.get(builtin=True, model="pi0", benchmark="libero_goal").success_rate == 0.958
    assert PublishedScore.objects.filter(pk=own.pk).exists()


@pytest.mark.parametrize(("reference", "key"), [
    ("prebuilt/smolvla/libero", "prebuilt/smolvla/libero"), ("lab/act:v1", "lab/act"),
    ("lab/act@sha256:" + "a" * 64, "lab/act"), ("localhost/x:1/ckpt", "localhost/x:1/ckpt"), ("pi05", "pi05"),
])
def test_a_model_is_named_without_its_tag_or_digest(reference, key):
    assert model_key(reference) == key


def test_an_organization_adds_its_own_numbers_and_they_win(api, tenant_a, tenant_b):
    sync_published()
    body = {"model": "prebuilt/libero-expert:latest", "benchmark": "libero_spatial", "successRate": 0.5,
            "episodes": 100, "source": "our notebook"}
    created = api.post("/v1/published-scores", body, format="json")
    assert created.status_code == 201 and created.json()["model"] == "prebuilt/libero-expert"
    assert api.post("/v1/published-scores", {**body, "successRate": 0.6}, format="json").status_code == 200
    evaluation = libero_run(tenant_a, "prebuilt/libero-expert", 20, 20)
    (row,) = reproduction_rows(evaluation)
    assert (row["published"], row["scope"], row["verdict"]) == (0.6, "organization", "above")
    other = tenant_b.client()
    assert all(r["scope"] != "organization" for r in other.get("/v1/published-scores").json()["items"])
    assert other.delete(f"/v1/published-scores/{created.json()['id']}").status_code == 404
    catalog = PublishedScore.objects.filter(builtin=True).first()
    assert api.delete(f"/v1/published-scores/{catalog.pk}").status_code == 404  # not the organization's
    assert api.delete(f"/v1/published-scores/{created.json()['id']}").json()["successRate"] == 0.6
    assert reproduction_rows(evaluation)[0]["scope"] == "catalog"


@pytest.mark.parametrize(("change", "path"), [
    ({"successRate": 1.5}, "successRate"), ({"benchmark": "../x"}, "benchmark"), ({"source": ""}, "source"),
    ({"episodes": 0}, "episodes"), ({"benchmark": 10}, "benchmark"), ({"source": "   "}, "source"),
])
def test_a_bad_published_number_is_a_400_at_its_field(api, change, path):
    body = {"model": "m", "benchmark": "libero_10", "successRate": 0.5, "source": "s", **change}
    r = api.post("/v1/published-scores", body, format="json")
    assert r.status_code == 400 and [d["path"] for d in r.json()["error"]["details"]] == [path]
    assert not PublishedScore.objects.filter(organization__isnull=False).exists()


def test_viewers_cannot_add_published_numbers(tenant_a):
    r = tenant_a.client(tenant_a.viewer_key).post("/v1/published-scores", {
        "model": "m", "benchmark": "b", "successRate": 0.5, "source": "s"}, format="json")
    assert r.status_code == 403


def test_benchmark_scores_carry_the_reference_and_its_verdict(api, tenant_a):
    sync_published()
    evaluation = libero_run(tenant_a, "prebuilt/libero-expert", 10, 10)
    scores = api.get(f"/v1/evaluations/{evaluation.public_id}/scores?groupBy=benchmark").json()
    (group,) = scores["groups"]
    ref = group["reference"]
    assert (ref["published"], ref["successes"], ref["judged"], ref["verdict"]) == (0.996, 10, 10, "undecided")
    assert ref["moreEpisodes"] == ref["episodesToDecide"] - 10 > 0 and ref["successRateCi"] == group["successRateCi"]
    by_task = api.get(f"/v1/evaluations/{evaluation.public_id}/scores").json()["groups"]
    assert "reference" not in by_task[0]  # published numbers are per benchmark
    random = libero_run(tenant_a, "prebuilt/random", 0, 4)
    (none,) = api.get(f"/v1/evaluations/{random.public_id}/scores?groupBy=benchmark").json()["groups"]
    assert none["reference"] is None


def test_the_dashboard_shows_the_verdict_on_the_scores_and_comparison_pages(client, tenant_a):
    sync_published()
    below = libero_run(tenant_a, "prebuilt/libero-expert", 30, 50)
    client.force_login(tenant_a.user)
    page = client.get(f"/evaluations/{below.public_id}").content.decode()
    assert 'id="reproduction-table"' in page and 'data-reproduction="below"' in page and "0.996" in page
    compare = client.get(f"/compare?evaluations={below.public_id}").content.decode()
    assert 'data-reproduction="below"' in compare and below.public_id in compare


def test_the_exported_bundle_carries_the_verdicts(tenant_a):
    from evaluations.datasets.exports import manifest_extra

    sync_published()
    evaluation = libero_run(tenant_a, "prebuilt/libero-expert", 50, 50, task="libero_goal/3")
    (row,) = manifest_extra(evaluation)["reproduction"]
    assert (row["model"], row["benchmark"], row["verdict"]) == ("prebuilt/libero-expert", "libero_goal", "reproduced")
