"""What /v1/schema promises: a serializer behind every response body, the statuses each operation returns, and a
path of its own for the image-version route. The fuzz test (test_schema_fuzz.py) checks the responses against it."""

from __future__ import annotations

import json

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from evaluations.models import Episode
from evaluations.planning import plan_evaluation
from evaluations.runs.lifecycle import create_evaluation
from tests.conftest import cartpole_request

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from drf_spectacular.generators import SchemaGenerator

    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema):
    for path, methods in schema["paths"].items():
        for method, op in methods.items():
            yield path, method, op


def test_every_json_body_has_a_serializer_not_a_bare_object(schema):
    for path, method, op in operations(schema):
        for code, response in op["responses"].items():
            for media, content in response.get("content", {}).items():
                if media == "application/json":
                    assert "$ref" in content["schema"], f"{method.upper()} {path} {code} is not described"


def test_every_error_is_the_envelope_and_every_authenticated_operation_may_be_a_401(schema):
    for path, method, op in operations(schema):
        errors = {code: r for code, r in op["responses"].items() if code.startswith(("4", "5"))}
        for code, response in errors.items():
            assert response["content"]["application/json"]["schema"]["$ref"].endswith("/Error"), (path, code)
            assert response["description"], (path, code)
        assert "406" in errors, f"{method.upper()} {path}"  # content negotiation comes first, everywhere
        if path != "/v1/info":
            assert "401" in errors, f"{method.upper()} {path}"


def test_the_version_route_has_its_own_path_and_pattern(schema):
    version = schema["paths"]["/v1/images/{name}@{digest}"]
    assert {"get", "delete"} <= set(version)
    digest = next(p for p in version["delete"]["parameters"] if p["name"] == "digest")
    assert digest["schema"]["pattern"] == "^sha256:[0-9a-f]{64}$"
    reference = next(p for p in schema["paths"]["/v1/images/{reference}"]["get"]["parameters"] if p["name"] == "reference")
    assert "sha256" not in reference["schema"].get("pattern", "")
    assert "delete" not in schema["paths"]["/v1/images/{reference}"]


def test_an_accept_header_without_json_is_a_406_in_the_envelope(api, client):
    for c, path in [(client, "/v1/info"), (api, "/v1/me"), (api, "/v1/evaluations")]:
        r = c.get(path, HTTP_ACCEPT="text/html")
        assert r.status_code == 406 and r.json()["error"]["code"] == "not_acceptable", path


def test_the_registry_protocol_endpoints_are_not_in_the_schema(schema):
    assert not [p for p in schema["paths"] if p.startswith(("/v1/registry/token", "/v1/registry/events", "/oauth"))]


def test_a_path_that_is_another_routes_is_a_405_in_the_envelope(api, schema):
    """``evaluations/imports`` and ``…/probes`` are routes of their own that take POST only."""
    for path, documented in [("/v1/evaluations/imports", "/v1/evaluations/{public_id}"),
                             ("/v1/images/a/my-env/probes", "/v1/images/{reference}")]:
        r = api.get(path)
        assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed", path
        assert "405" in schema["paths"][documented]["get"]["responses"]


def test_a_range_outside_the_video_is_a_416_in_the_envelope(api, tenant_a):
    evaluation = create_evaluation(plan=plan_evaluation(cartpole_request(), organization=tenant_a.org),
                                   raw_body=json.dumps(cartpole_request()), organization=tenant_a.org, creator=tenant_a.user)
    video = default_storage.save("episodes/t/ep.mp4", ContentFile(b"\x00" * 100))
    episode = Episode.objects.create(evaluation=evaluation, workload=evaluation.workloads.get(), index=0, seed=0,
                                     status="completed", stop_condition="terminated", video=video)
    url = f"/v1/evaluations/{evaluation.public_id}/episodes/{episode.pk}/video"
    r = api.get(url, HTTP_RANGE="bytes=500-")
    assert r.status_code == 416 and r["Content-Range"] == "bytes */100"
    assert r.json()["error"]["code"] == "range_not_satisfiable"
    assert api.get(url, HTTP_RANGE="bytes=0-9").status_code == 206


def test_a_string_that_is_refused_blank_once_trimmed_says_so_in_its_pattern(schema, api):
    """Field case (the fuzzer): ``{"source": " "}`` met ``minLength: 1`` and ``^[^\\u0000]*$`` yet is blank once
    DRF trims it, a 400 for a schema-valid body. Every trimmed, non-blank request string states it."""
    import re

    from evaluations.api.schema import NO_NUL_PATTERN, NOT_BLANK_PATTERN

    fields = schema["components"]["schemas"]["PublishedScoreRequestRequest"]["properties"]
    assert fields["source"]["pattern"] == fields["model"]["pattern"] == NOT_BLANK_PATTERN
    # A field that may be blank keeps the NUL rule alone (an evaluation's display name).
    assert schema["components"]["schemas"]["EvaluationRequestRequest"]["properties"]["name"]["oneOf"][0]["pattern"] == NO_NUL_PATTERN
    for value, valid in [(" ", False), ("\t\u3000\n", False), ("", False), ("a\u0000", False), (" a ", True), ("é", True)]:
        assert bool(re.search(NOT_BLANK_PATTERN, value)) is valid, value
        body = {"model": "m", "benchmark": "libero_10", "successRate": 0.5, "source": value}
        r = api.post("/v1/published-scores", body, content_type="application/json")
        assert (r.status_code in (200, 201)) is valid, (value, r.content)
