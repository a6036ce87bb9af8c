"""Every path under /v1 and /oauth that names nothing answers the JSON error envelope, whatever characters it holds
(Django's HTML 404 is for the dashboard only)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

#: Percent-encoded characters a fuzzer (or a typo) puts in a path: newline and carriage return (``.`` in a regex
#: does not match a newline), NUL, tab, vertical tab, DEL, a C1 control, U+2028, a non-ASCII letter and a byte
#: that is not UTF-8.
ODD = ["%0A", "%0D", "%0D%0A", "%00", "%09", "%0B", "%7F", "%C2%85", "%E2%80%A8", "%C3%B8", "%FF", "%20"]


def _unknown_paths(odd: str) -> list[str]:
    paths = [
        f"/v1/x{odd}y", f"/v1/{odd}", f"/v1/info{odd}", f"/v1/me{odd}", f"/v1/schema{odd}", f"/v1/evaluations/x/scores{odd}",
        f"/v1/images{odd}", f"/v1/evaluations/{odd}/scores/x", f"/oauth/{odd}", f"/oauth/token{odd}",
    ]
    if odd.startswith(("%0", "%2", "%7")):  # a control character or space right after the prefix is still below it
        paths += [f"/v1{odd}", f"/oauth{odd}"]
    return paths


@pytest.mark.parametrize("odd", ODD)
@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_it_answers_the_json_envelope_for_any_character(api, odd, method):
    for path in _unknown_paths(odd):
        r = getattr(api, method)(path)
        assert r.status_code == 404, (method, path, r.status_code)
        assert r["Content-Type"] == "application/json", (method, path)
        error = r.json()["error"]
        assert error["code"] == "not_found" and error["message"] and error["details"] == [], path


@pytest.mark.parametrize("odd", ODD)
def test_routes_with_a_free_form_segment_answer_the_envelope_too(api, odd):
    """``images/<reference>`` takes any character; what it answers (404, 400, 405) is still the envelope."""
    for method, path in [("get", f"/v1/images/a{odd}b"), ("delete", f"/v1/images/a{odd}b"),
                         ("get", f"/v1/images/a/b{odd}/probes"), ("post", f"/v1/images/a/b{odd}/probes"),
                         ("get", f"/v1/evaluations/a{odd}b"), ("get", f"/v1/evaluations/a{odd}b/episodes")]:
        r = getattr(api, method)(path)
        assert 400 <= r.status_code < 500 and r["Content-Type"] == "application/json", (method, path, r.status_code)
        assert set(r.json()) == {"error"} and r.json()["error"]["message"], (method, path)


def test_it_leaves_other_paths_to_the_dashboard(client):
    for path in ("/v1x", "/v1.json", "/oauthx", "/nope%0A"):
        r = client.get(path)
        assert r.status_code in (302, 404) and not r["Content-Type"].startswith("application/json"), path


@pytest.mark.parametrize("fmt", ["xml", "%00", "yamlx"])
def test_an_unknown_schema_format_is_a_json_400_naming_the_formats(client, fmt):
    """A field case: ``/v1/schema?format=xml`` was a 404 with the error envelope rendered as YAML."""
    r = client.get(f"/v1/schema?format={fmt}")
    assert r.status_code == 400 and r["Content-Type"].startswith("application/json"), r.content[:200]
    (detail,) = r.json()["error"]["details"]
    assert detail["path"] == "format" and "json" in detail["message"] and "yaml" in detail["message"]
    assert client.get("/v1/schema?format=json").json()["openapi"].startswith("3.")
    assert client.get("/v1/schema").content.startswith(b"openapi:")


def test_a_version_parameter_is_not_echoed_into_the_schema(client):
    plain = client.get("/v1/schema?format=json").json()["info"]["version"]
    assert client.get("/v1/schema?format=json&version=zz%3Cb%3E").json()["info"]["version"] == plain
