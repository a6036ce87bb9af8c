"""Tenancy matrix: a member of organization B gets 404 for every object of organization A, on every /v1
route and every dashboard page that takes an object id, and never sees A's objects in a list."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from evaluations.models import ApiKey, DatasetExport, Episode, Evaluation, ImageRepository, ImageVersion, Membership
from evaluations.runs.lifecycle import create_evaluation
from evaluations.planning import plan_evaluation
from tests.conftest import cartpole_request

pytestmark = pytest.mark.django_db

# (method, url name, path template) for every route that addresses one object
API_OBJECT_ROUTES = [
    ("get", "evaluations-api:evaluation", "/v1/evaluations/{e}"),
    ("post", "evaluations-api:cancellations", "/v1/evaluations/{e}/cancellations"),
    ("get", "evaluations-api:scores", "/v1/evaluations/{e}/scores"),
    ("get", "evaluations-api:metrics", "/v1/evaluations/{e}/metrics"),
    ("get", "evaluations-api:episodes", "/v1/evaluations/{e}/episodes"),
    ("get", "evaluations-api:logs", "/v1/evaluations/{e}/logs"),
    ("get", "evaluations-api:episode-video", "/v1/evaluations/{e}/episodes/{ep}/video"),
    ("get", "evaluations-api:lerobot-dataset", "/v1/evaluations/{e}/lerobot-dataset"),
    ("post", "evaluations-api:lerobot-dataset", "/v1/evaluations/{e}/lerobot-dataset"),
    ("get", "evaluations-api:lerobot-dataset-zip", "/v1/evaluations/{e}/lerobot-dataset.zip"),
    ("get", "evaluations-api:image", "/v1/images/{img}"),
    ("post", "evaluations-api:image-probes", "/v1/images/{img}/probes"),
    ("delete", "evaluations-api:image-version", "/v1/images/{img}@{digest}"),
]
DASHBOARD_OBJECT_ROUTES = [
    ("get", "evaluations:evaluation_detail", "/evaluations/{e}"),
    ("get", "evaluations:evaluation_tab", "/evaluations/{e}/episodes"),
    ("get", "evaluations:evaluation_tab", "/evaluations/{e}/configuration"),
    ("get", "evaluations:evaluation_tab", "/evaluations/{e}/logs"),
    ("get", "evaluations:evaluation_tab", "/evaluations/{e}/overview"),
    ("get", "evaluations:evaluation_progress", "/evaluations/{e}/progress"),
    ("post", "evaluations:evaluation_cancel", "/evaluations/{e}/cancel"),
    ("post", "evaluations:evaluation_baseline", "/evaluations/{e}/baseline"),
    ("get", "evaluations:evaluation_request", "/evaluations/{e}/request.json"),
    ("get", "evaluations:episode_video", "/evaluations/{e}/episodes/{ep}/video.mp4"),
    ("get", "evaluations:episode_transcript", "/evaluations/{e}/episodes/{ep}/transcript"),
    ("get", "evaluations:transcript_screenshot", "/evaluations/{e}/episodes/{ep}/transcript/step-000.png"),
    ("get", "evaluations:evaluation_new", "/evaluations/new?from={e}"),
    ("get", "evaluations:lerobot_dataset_panel", "/evaluations/{e}/lerobot-dataset"),
    ("post", "evaluations:lerobot_dataset_export", "/evaluations/{e}/lerobot-dataset/export"),
    ("get", "evaluations:lerobot_dataset_download", "/evaluations/{e}/lerobot-dataset.zip"),
    ("post", "evaluations:api_key_revoke", "/settings/api-keys/{k}/revoke"),
    ("post", "evaluations:member_update", "/settings/members/{m}"),
    ("post", "evaluations:image_reprobe", "/images/versions/{v}/probes"),
]
ID_KWARGS = {"public_id", "key_id", "membership_id", "reference", "digest", "version_id", "episode_id"}


def _patterns(resolver, prefix=""):
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            ns = f"{p.namespace}:" if p.namespace else ""
            yield from _patterns(p, prefix + ns)
        elif isinstance(p, URLPattern) and p.name:
            yield prefix + p.name, set(p.pattern.regex.groupindex)


def test_the_matrix_covers_every_route_that_takes_an_id():
    covered = {name for _, name, _ in API_OBJECT_ROUTES + DASHBOARD_OBJECT_ROUTES}
    with_ids = {name for name, groups in _patterns(get_resolver()) if groups & ID_KWARGS}
    assert with_ids <= covered, f"add these routes to the tenancy matrix: {with_ids - covered}"


@pytest.fixture
def world(tenant_a, tenant_b):
    evaluation = create_evaluation(plan=plan_evaluation(cartpole_request(), organization=tenant_a.org),
                                   raw_body=json.dumps(cartpole_request()), organization=tenant_a.org, creator=tenant_a.user)
    workload = evaluation.workloads.get()
    video = default_storage.save("episodes/test/ep.mp4", ContentFile(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 100))
    episode = Episode.objects.create(evaluation=evaluation, workload=workload, index=0, seed=0, status="completed", reward=1.0, success=True,
                                     stop_condition="time_limit", video=video, video_meta={"bytes": 112})
    DatasetExport.objects.create(evaluation=evaluation, status=DatasetExport.Status.READY,
                                 file=default_storage.save("datasets/test/ds.zip", ContentFile(b"PK\x05\x06" + b"\x00" * 18)))
    repo = ImageRepository.objects.create(namespace=tenant_a.org.slug, name="private-env", kind="env")
    repo.current_version = ImageVersion.objects.create(repository=repo, digest="sha256:" + "2" * 64, source="python://x:Y", tags=["latest"])
    repo.save()
    return {
        "e": evaluation.public_id,
        "img": repo.path,
        "k": tenant_a.api_key.pk,
        "m": Membership.objects.get(user=tenant_a.user, organization=tenant_a.org).pk,
        "v": repo.current_version.pk,
        "digest": repo.current_version.digest,
        "ep": episode.pk,
    }


@pytest.mark.parametrize("method,name,template", API_OBJECT_ROUTES)
def test_api_routes_hide_other_organizations_objects(world, tenant_a, tenant_b, method, name, template):
    path = template.format(**world)
    if method != "delete":  # A deleting its own image is tested elsewhere; here it must survive B's attempt
        # 409: found, but not in a state for it (a dataset export of a queued evaluation)
        assert getattr(tenant_a.client(), method)(path, **({"data": {}, "format": "json"} if method == "post" else {})).status_code in (200, 202, 409)
    r = getattr(tenant_b.client(), method)(path, **({"data": {}, "format": "json"} if method == "post" else {}))
    assert r.status_code == 404, (path, r.status_code)
    assert "error" in r.json()


@pytest.mark.parametrize("method,name,template", DASHBOARD_OBJECT_ROUTES)
def test_dashboard_pages_hide_other_organizations_objects(world, tenant_a, tenant_b, method, name, template):
    path = template.format(**world)
    web = Client()
    web.force_login(tenant_b.user)
    assert getattr(web, method)(path).status_code == 404, path
    # the object is untouched
    assert ApiKey.objects.get(pk=world["k"]).revoked_at is None
    assert Membership.objects.filter(pk=world["m"]).exists()
    assert Evaluation.objects.get(public_id=world["e"]).status == "queued"
    assert ImageVersion.objects.get(pk=world["v"]).probe_status == "passed"


def test_lists_never_include_other_organizations_objects(world, tenant_b):
    api = tenant_b.client()
    assert api.get("/v1/evaluations").json()["items"] == []
    assert world["img"] not in {i["reference"] for i in api.get("/v1/images").json()["items"]}
    assert [o["providerId"] for o in api.get("/v1/me/organizations").json()["organizations"]] == [tenant_b.org.provider_id]
    web = Client()
    web.force_login(tenant_b.user)
    for page in ("/evaluations", f"/compare?evaluations={world['e']}", "/images", "/settings", "/evaluations/new"):
        html = web.get(page).content.decode().split("<main>")[1]
        assert world["e"] not in html and world["img"] not in html and "alice-a" not in html, page
