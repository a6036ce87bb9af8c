"""Downloads under ASGI, the web server as deployed (issue 33): a file goes out from the event loop through an
asynchronous iterator (no request thread held, nothing read whole into memory first), and one caller holds a bounded
number of downloads at once (a 429 in the envelope past it, the slot back when a download ends)."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from django.core.files.base import ContentFile
from django.test import AsyncClient, override_settings
from django.urls import reverse

from evaluations.models import DatasetExport
from tests.api.test_lerobot_dataset_api import _recorded, media  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)

SIZE = 3 * 2**20


@pytest.fixture(autouse=True)
def _no_messages(monkeypatch):
    """These tests commit (the async client reads from another thread): no Celery message leaves for a broker."""
    from evaluations import dispatch

    monkeypatch.setattr(dispatch, "_send", lambda *args, **kwargs: None)


@pytest.fixture
def exported(tenant_a, media, settings):
    evaluation = _recorded(tenant_a, episodes_=1, max_steps=2)
    ready = DatasetExport.objects.create(evaluation=evaluation, status="ready", meta={"images": "image", "bytes": SIZE})
    ready.file.save("big.zip", ContentFile(bytes(range(256)) * (SIZE // 256)))
    return f"/v1/evaluations/{evaluation.public_id}/lerobot-dataset.zip"


def _asgi(settings):
    """The middleware as the settings list it under ASGI (``RLMESH_ASGI``)."""
    return override_settings(MIDDLEWARE=["rlmesh_site.streaming.AsyncFileStreamingMiddleware", *settings.MIDDLEWARE])


def test_a_download_under_asgi_streams_through_an_async_iterator(tenant_a, exported, settings):
    client = AsyncClient()

    async def fetch(path, **headers):
        response = await client.get(path, headers={"Authorization": f"Bearer {tenant_a.key}", **headers})
        chunks = [chunk async for chunk in response.streaming_content] if response.streaming else [response.content]
        return response, b"".join(chunks)

    with _asgi(settings), warnings.catch_warnings():
        warnings.simplefilter("error")  # Django warns when it has to read a sync iterator whole under ASGI
        response, body = asyncio.run(fetch(exported))
        assert response.status_code == 200 and response.is_async and len(body) == SIZE
        assert body[:4] == bytes(range(4))
        partial, tail = asyncio.run(fetch(exported, Range="bytes=-10"))
        assert partial.status_code == 206 and partial.is_async and tail == body[-10:]


def test_a_caller_holds_a_bounded_number_of_downloads_and_gets_its_slot_back(tenant_a, tenant_b, exported, settings,
                                                                            tmp_path):
    settings.RLMESH_DOWNLOADS_PER_CALLER = 2
    api = tenant_a.client()
    open_ = [api.get(exported), api.get(exported)]  # started, not read: both hold a slot
    assert [r.status_code for r in open_] == [200, 200]
    refused = api.get(exported)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_downloads", refused.content
    assert refused["Retry-After"] == "5" and "RLMESH_DOWNLOADS_PER_CALLER" in refused.json()["error"]["message"]
    viewer = tenant_a.client(tenant_a.viewer_key)  # another key of the same organization has slots of its own
    assert viewer.get(exported).status_code == 200
    b"".join(open_[0].streaming_content)  # read to the end: the response closes and gives its slot back
    again = api.get(exported)
    assert again.status_code == 200
    for response in (open_[1], again):
        response.close()


def test_the_dashboards_download_holds_a_slot_too(tenant_a, exported, settings, client):
    settings.RLMESH_DOWNLOADS_PER_CALLER = 1
    client.force_login(tenant_a.user)
    url = reverse("evaluations:lerobot_dataset_download", args=[exported.split("/")[3]])
    first = client.get(url)
    assert first.status_code == 200
    second = client.get(url)
    assert second.status_code == 429 and "RLMESH_DOWNLOADS_PER_CALLER" in second.content.decode()
    first.close()
    assert client.get(url).status_code == 200


@pytest.mark.parametrize("declared", [10**12, 2**31])
def test_a_body_declared_past_any_limit_is_refused_before_django_reads_it(declared):
    from rlmesh_site.asgi import BodyLimits

    reached, sent = [], []

    async def app(scope, receive, send):
        reached.append(scope)

    async def receive():
        raise AssertionError("the body was read")

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/evaluations",
             "headers": [(b"content-length", str(declared).encode())]}
    asyncio.run(BodyLimits(app)(scope, receive, send))
    assert not reached and sent[0]["status"] == 413 and b"payload_too_large" in sent[1]["body"]


def test_a_chunked_body_past_the_limit_is_cut_off(settings):
    from rlmesh_site.asgi import BodyLimits, largest_body

    settings.RLMESH_IMPORT_MAX_BYTES = 10
    limit = largest_body()
    messages = [{"type": "http.request", "body": b"x" * (limit // 2 + 1), "more_body": True}] * 3
    seen = []

    async def app(scope, receive, send):
        for _ in range(3):
            seen.append((await receive())["type"])

    async def receive():
        return messages.pop()

    asyncio.run(BodyLimits(app)({"type": "http", "method": "POST", "headers": []}, receive, None))
    assert seen == ["http.request", "http.disconnect", "http.disconnect"]


def test_a_file_response_under_wsgi_is_left_as_it_is(tenant_a, exported):
    response = tenant_a.client().get(exported)
    assert response.status_code == 200 and not response.is_async
    response.close()
