"""Episode videos over the API and the dashboard: range requests, metadata in episodes and metrics."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.test import Client

from evaluations.models import Episode
from evaluations.runs.lifecycle import create_evaluation
from evaluations.planning import plan_evaluation
from evaluations.runs.recording import encode_mp4, store_video
from tests.conftest import cartpole_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def recorded(tenant_a):
    evaluation = create_evaluation(plan=plan_evaluation(cartpole_request(), organization=tenant_a.org),
                                   raw_body=json.dumps(cartpole_request()), organization=tenant_a.org, creator=tenant_a.user)
    frames = [np.full((64, 96, 3), i * 8, np.uint8) for i in range(30)]
    data, meta = encode_mp4(frames)
    name = store_video(f"episodes/{evaluation.public_id}/w000-e00000.mp4", data)
    workload = evaluation.workloads.get()
    ep = Episode.objects.create(evaluation=evaluation, workload=workload, index=0, seed=0, status="completed", reward=9.0,
                                success=False, steps=29, stop_condition="terminated", video=name, video_meta={**meta, "renderMs": 12.5})
    Episode.objects.create(evaluation=evaluation, workload=workload, index=1, seed=1, status="completed", reward=500.0,
                           success=True, steps=500, stop_condition="time_limit")
    return evaluation, ep, data


def test_encoded_video_is_h264_mp4_with_faststart(recorded):
    _, ep, data = recorded
    assert data[4:8] == b"ftyp"
    assert data.find(b"moov") < data.find(b"mdat")  # +faststart: playable before the whole file arrived
    assert ep.video_meta["frames"] == 30 and ep.video_meta["codec"] == "h264" and ep.video_meta["bytes"] == len(data)


def test_api_lists_video_metadata_and_serves_ranges(api, recorded):
    evaluation, ep, data = recorded
    items = api.get(f"/v1/evaluations/{evaluation.public_id}/episodes").json()["items"]
    video = items[0]["video"]
    assert video["url"] == f"/v1/evaluations/{evaluation.public_id}/episodes/{ep.pk}/video"
    assert video["bytes"] == len(data) and video["frames"] == 30 and items[1]["video"] is None
    whole = api.get(video["url"])
    assert whole.status_code == 200 and whole["Accept-Ranges"] == "bytes" and b"".join(whole.streaming_content) == data
    part = api.get(video["url"], HTTP_RANGE="bytes=10-19")
    assert part.status_code == 206 and part["Content-Range"] == f"bytes 10-19/{len(data)}"
    assert b"".join(part.streaming_content) == data[10:20]
    tail = api.get(video["url"], HTTP_RANGE="bytes=-5")
    assert tail.status_code == 206 and b"".join(tail.streaming_content) == data[-5:]
    assert api.get(video["url"], HTTP_RANGE=f"bytes={len(data)}-").status_code == 416
    other = Episode.objects.exclude(pk=ep.pk).get()
    assert api.get(f"/v1/evaluations/{evaluation.public_id}/episodes/{other.pk}/video").status_code == 404


def test_a_missing_video_says_which_is_missing(api, recorded, tenant_b):
    """No episode, another evaluation's episode and an episode without video are three different 404s (a field
    case: all three said "this episode has no video")."""
    evaluation, ep, _ = recorded
    other = Episode.objects.exclude(pk=ep.pk).get()
    url = f"/v1/evaluations/{evaluation.public_id}/episodes/{{}}/video"
    assert api.get(url.format(other.pk)).json()["error"]["message"] == f"episode {other.pk} has no video"
    missing = api.get(url.format(10**9)).json()["error"]["message"]
    assert missing == f"evaluation {evaluation.public_id} has no episode {10**9}"
    theirs = create_evaluation(plan=plan_evaluation(cartpole_request(), organization=tenant_b.org),
                               raw_body=json.dumps(cartpole_request()), organization=tenant_b.org, creator=tenant_b.user)
    foreign = Episode.objects.create(evaluation=theirs, workload=theirs.workloads.get(), index=0, seed=0,
                                     status="completed", video=ep.video.name)
    r = api.get(url.format(foreign.pk))
    assert r.status_code == 404 and r.json()["error"]["message"] == f"evaluation {evaluation.public_id} has no episode {foreign.pk}"


def test_metrics_report_video_size_and_encode_time(api, recorded):
    evaluation, ep, data = recorded
    videos = api.get(f"/v1/evaluations/{evaluation.public_id}/metrics").json()["videos"]
    assert videos["count"] == 1 and videos["totalBytes"] == len(data)
    assert videos["encodeMsPerEpisode"]["p50"] == ep.video_meta["encodeMs"] and videos["renderMsPerEpisode"]["max"] == 12.5


def test_episodes_tab_plays_videos_inline(tenant_a, recorded):
    evaluation, ep, _ = recorded
    web = Client()
    web.force_login(tenant_a.user)
    html = web.get(f"/evaluations/{evaluation.public_id}/episodes?show=videos").content.decode()
    assert f'src="/evaluations/{evaluation.public_id}/episodes/{ep.pk}/video.mp4"' in html and "<video" in html
    assert html.count("<video") == 1  # the filter keeps only episodes with a video
    r = web.get(f"/evaluations/{evaluation.public_id}/episodes/{ep.pk}/video.mp4", HTTP_RANGE="bytes=0-1")
    assert r.status_code == 206 and r["Content-Type"] == "video/mp4"


def test_videos_go_through_the_configured_storage_backend(api, tenant_a, settings):
    """Any Django storage works (S3 in production): here the in-memory backend, nothing on disk."""
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"}}
    from django.core.files.storage import InMemoryStorage, storages

    assert isinstance(storages["default"], InMemoryStorage)
    data, meta = encode_mp4([np.zeros((32, 32, 3), np.uint8)] * 5)
    name = store_video("episodes/mem/e0.mp4", data)
    evaluation = create_evaluation(plan=plan_evaluation(cartpole_request(), organization=tenant_a.org),
                                   raw_body="{}", organization=tenant_a.org, creator=tenant_a.user)
    ep = Episode.objects.create(evaluation=evaluation, workload=evaluation.workloads.get(), index=0, seed=0, status="completed",
                                reward=1.0, success=False, stop_condition="terminated", video=name, video_meta=meta)
    assert not (settings.MEDIA_ROOT / name).exists()
    r = api.get(f"/v1/evaluations/{evaluation.public_id}/episodes/{ep.pk}/video", HTTP_RANGE="bytes=0-7")
    assert r.status_code == 206 and b"".join(r.streaming_content) == data[:8]


@pytest.mark.parametrize("header, status, body", [
    ("bytes=0-" + "9" * 5000, 206, slice(None)),  # a last position past any file is clamped, never a 500
    ("bytes=" + "9" * 5000 + "-", 416, None),  # a first position past the end is unsatisfiable
    ("bytes=5-2", 200, slice(None)),  # an invalid range is ignored (RFC 9110 §14.2)
    ("bytes=-" + "9" * 40, 206, slice(None)),  # a suffix longer than the file is the whole file
    ("bytes=2-4", 206, slice(2, 5)),
    ("items=0-4", 200, slice(None)),
])
def test_range_headers_of_any_size_get_an_answer_per_rfc_9110(api, tenant_a, recorded, header, status, body):
    evaluation, ep, data = recorded
    web = Client()
    web.force_login(tenant_a.user)
    for client, url in ((api, f"/v1/evaluations/{evaluation.public_id}/episodes/{ep.pk}/video"),
                        (web, f"/evaluations/{evaluation.public_id}/episodes/{ep.pk}/video.mp4")):
        r = client.get(url, HTTP_RANGE=header)
        assert r.status_code == status, (url, header)
        if body is not None:
            assert b"".join(r.streaming_content) == data[body]


def test_head_on_either_video_url_answers_like_get_without_a_body(api, tenant_a, recorded):
    evaluation, ep, data = recorded
    web = Client()
    web.force_login(tenant_a.user)
    for client, url in ((api, f"/v1/evaluations/{evaluation.public_id}/episodes/{ep.pk}/video"),
                        (web, f"/evaluations/{evaluation.public_id}/episodes/{ep.pk}/video.mp4")):
        r = client.head(url)
        assert r.status_code == 200 and r["Content-Length"] == str(len(data)) and r["Accept-Ranges"] == "bytes"
