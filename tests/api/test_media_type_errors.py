"""415 answers say what the endpoint accepts and link the manual, like the API's other errors."""

from __future__ import annotations


def test_an_import_sent_as_json_says_what_it_accepts(api):
    """Field case: a JSON body got DRF's stock 'Unsupported media type "application/json" in request.'"""
    r = api.post("/v1/evaluations/imports", {"bundle": "x"}, format="json")
    assert r.status_code == 415
    error = r.json()["error"]
    assert error["code"] == "unsupported_media_type"
    assert 'file field "bundle"' in error["message"] and "application/zip" in error["message"], error
    assert "application/json is not a bundle" in error["message"]
    assert error["docs"].endswith("/docs/using/imports/")


def test_a_submission_that_is_not_json_links_the_request_page(api):
    r = api.post("/v1/evaluations", "models=x", content_type="text/plain")
    assert r.status_code == 415
    error = r.json()["error"]
    assert error["code"] == "unsupported_media_type" and "application/json" in error["message"]
    assert error["docs"].endswith("/docs/using/request/")
