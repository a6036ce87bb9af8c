"""LengthRequiredMiddleware: a body without Content-Length (chunked) is a 411, in the envelope on JSON paths."""

from __future__ import annotations

import json

from django.http import HttpResponse
from django.test import RequestFactory

from evaluations.middleware import LengthRequiredMiddleware

middleware = LengthRequiredMiddleware(lambda request: HttpResponse("read", status=200))


def request(path: str, **meta):
    r = RequestFactory().post(path, data=b"{}", content_type="application/json")
    r.META.update(meta)
    return r


def test_a_chunked_body_is_a_411():
    r = request("/v1/evaluations", HTTP_TRANSFER_ENCODING="chunked")
    del r.META["CONTENT_LENGTH"]
    response = middleware(r)
    assert response.status_code == 411
    assert json.loads(response.content)["error"]["code"] == "length_required"
    # like every other error of the API, it links the manual's page that explains it
    assert json.loads(response.content)["error"]["docs"].endswith("/docs/using/request/")
    r = request("/evaluations/new", HTTP_TRANSFER_ENCODING="chunked")
    del r.META["CONTENT_LENGTH"]
    response = middleware(r)
    assert response.status_code == 411 and response["Content-Type"].startswith("text/plain")


def test_a_body_with_its_length_passes():
    assert middleware(request("/v1/evaluations")).status_code == 200
    assert middleware(request("/v1/evaluations", HTTP_TRANSFER_ENCODING="identity")).status_code == 200


def test_the_bare_api_roots_answer_json_and_bodyless_methods_pass():
    r = request("/v1", HTTP_TRANSFER_ENCODING="chunked")
    del r.META["CONTENT_LENGTH"]
    assert middleware(r).status_code == 411 and json.loads(middleware(r).content)["error"]["code"] == "length_required"
    get = RequestFactory().get("/v1/evaluations", HTTP_TRANSFER_ENCODING="chunked")
    get.META.pop("CONTENT_LENGTH", None)
    assert middleware(get).status_code == 200  # nothing to read: a GET is not refused for its framing
