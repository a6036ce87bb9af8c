"""Fuzz every /v1 and /agents operation against ``/v1/schema`` with schemathesis and every check it has (as
``schemathesis run … --checks all``): no server error; every response in its declared schema, status code, content
type and headers; a request the schema calls valid is accepted and one it calls invalid refused; undeclared methods
answer 405 with an ``Allow`` that lists the documented ones; and every 4xx/5xx in the error envelope.

The schema is loaded from the app in-process (``from_wsgi``) and requests go through Django's WSGI handler inside
the test's transaction, so nothing listens on a port and every operation starts from the same seeded world: an
evaluation with episodes (one with a video), logs and a shard; a finished evaluation (cancelling it is a 409) that is
the baseline of ``suite:nightly``, and a later one with that tag (it carries a regression verdict); an
image repository in the organization's namespace with a current version and a deleted one (probing it is a 409).
In positive cases path parameters are drawn from those real ids or from what schemathesis generates, so both the
2xx and the 404 paths run; so are a comparison's ``a``/``b`` and a baseline's ``evaluation``. Negative cases go
out as generated. Requests carry a member's API key (members write; the viewer 403 is covered in
test_evaluations_api).

Bounded: ``MAX_EXAMPLES`` per operation in the fuzzing phase (plus schemathesis's examples and coverage phases,
and its probes of undeclared methods), derandomized, so every run sends the same requests (about 2,500; two to
three minutes on two shared cores). ``FUZZ_LOG=/tmp/fuzz.log`` writes one line per request to see what a run
covered. Excluded: nothing in the schema; one check on five operations (``STATE_DEPENDENT_BODIES`` in tests/support/fuzz.py). Not in it: the
registry's own endpoints (``/v1/registry/token`` and ``/events``, see api/registry.py for why) and ``/oauth/...``
(tests/api/test_not_found.py sends odd paths there).
"""

from __future__ import annotations

import json
import os

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import positive_data_acceptance

from tests.support.fuzz import STATE_DEPENDENT_BODIES, real_values_in_positive_cases, seed_world

pytestmark = pytest.mark.django_db

MAX_EXAMPLES = 30

schema = schemathesis.openapi.from_wsgi("/v1/schema?format=json", get_wsgi_application())
# Every request carries the member's key (as ``-H`` does on the command line), so schemathesis generates no
# Authorization values of its own: a dropped or mangled credential is test_auth_limits' subject, not this one's.
# No NUL in generated strings: the parser refuses one anywhere in a body, keys of unknown fields included, and an
# OpenAPI 3.0 schema cannot say so of those keys (``propertyNames`` is JSON Schema draft 6, which schemathesis reads
# as unconstraining there): a field case, a body with an unknown NUL-keyed member "rejected though schema-valid".
# NUL refusals are tests/api/test_nul_characters.py's subject.
schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True, with_security_parameters=False,
                                allow_x00=False)
# A raw bundle upload (POST /v1/evaluations/imports) is bytes like any octet stream.
schemathesis.serializer.alias("application/zip", "application/octet-stream")

#: Real values for each path parameter, set by the ``world`` fixture before each operation runs.
REAL: dict[str, list] = {}


@pytest.fixture
def world(tenant_a, settings):
    """The seeded organization A; yields the member API key."""
    settings.RLMESH_REGISTRY_HOST = "127.0.0.1:9"  # nothing listens: deleting a version's manifest is best effort
    # Schemathesis sends hundreds of invalid credentials from one address; the one sign-in limit would answer them
    # 429 (tests/api/test_auth_limits.py covers it), where the auth checks expect the 401 that precedes it.
    settings.RATELIMIT_AUTH_FAILURES = "1000000/m"
    REAL.clear()
    REAL.update(seed_world(tenant_a))
    # Django's test client keeps the connection open across requests; a bare WSGI call would close it (and with
    # it the test's transaction) when each request ends.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield tenant_a.key
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.hook
def flatmap_case(context, case):
    """Real ids, sides, evaluations and ranges in positive cases (tests.support.fuzz)."""
    return real_values_in_positive_cases(case, REAL)


if os.environ.get("FUZZ_LOG"):

    @schema.hook
    def after_call(context, case, response):
        with open(os.environ["FUZZ_LOG"], "a") as fh:
            fh.write(f"{case.method} {case.operation.path} {response.status_code} {case.formatted_path} {case.headers}\n")


def error_envelope(ctx, response, case):
    """Every 4xx/5xx is ``{"error": {"code", "message", "details"}}`` as JSON."""
    if response.status_code < 400:
        return None
    content_type = (response.headers.get("content-type") or [""])[0]
    assert content_type.startswith("application/json"), f"{response.status_code} is {content_type!r}, not the JSON envelope"
    body = json.loads(response.content)
    assert isinstance(body, dict) and set(body) == {"error"}, f"not the envelope: {body!r}"[:300]
    error = body["error"]
    assert isinstance(error.get("code"), str) and error["code"], f"no code: {body!r}"[:300]
    assert isinstance(error.get("message"), str) and error["message"], f"no message: {body!r}"[:300]
    assert isinstance(error.get("details"), list), f"no details list: {body!r}"[:300]
    return None


@schema.parametrize()
# ``world`` is seeded once per operation, not per example: state carries over between examples (a cancel, a
# delete), as it would for a client.
@hypothesis_settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_every_operation_conforms_to_its_schema(case, world):
    excluded = [positive_data_acceptance] if (case.method, case.path) in STATE_DEPENDENT_BODIES else []
    case.call_and_validate(headers={"Authorization": f"Bearer {world}"}, additional_checks=[error_envelope],
                           excluded_checks=excluded)
