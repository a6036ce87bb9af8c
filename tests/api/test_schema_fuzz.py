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
covered. Excluded: nothing in the schema; one check on five operations (``STATE_DEPENDENT_BODIES``). Not in it: the
registry's own endpoints (``/v1/registry/token`` and ``/events``, see api/registry.py for why) and ``/oauth/...``
(tests/api/test_not_found.py sends odd paths there).
"""

from __future__ import annotations

import json
import os
from datetime import timedelta

import pytest
import schemathesis
from django.core import signals
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from schemathesis.checks import positive_data_acceptance

from evaluations.choices import EvaluationStatus, ProbeStatus
from evaluations.models import Baseline, Episode, Evaluation, EvaluationLog, ImageRepository, ImageVersion, Shard
from evaluations.planning import plan_evaluation
from evaluations.runs.lifecycle import create_evaluation
from tests.conftest import cartpole_request

pytestmark = pytest.mark.django_db

MAX_EXAMPLES = 30
NIGHTLY = {"suite": "nightly"}
HEURISTICS = "prebuilt/classic-control-heuristics"

schema = schemathesis.openapi.from_wsgi("/v1/schema?format=json", get_wsgi_application())
# Every request carries the member's key (as ``-H`` does on the command line), so schemathesis generates no
# Authorization values of its own: a dropped or mangled credential is test_auth_limits' subject, not this one's.
schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True, with_security_parameters=False)
# A raw bundle upload (POST /v1/evaluations/imports) is bytes like any octet stream.
schemathesis.serializer.alias("application/zip", "application/octet-stream")

#: Real values for each path parameter, set by the ``world`` fixture before each operation runs.
REAL: dict[str, list] = {}


def _evaluation(tenant, **fields) -> Evaluation:
    body = cartpole_request()
    evaluation = create_evaluation(plan=plan_evaluation(body, organization=tenant.org), raw_body=json.dumps(body),
                                   organization=tenant.org, creator=tenant.user)
    Evaluation.objects.filter(pk=evaluation.pk).update(**fields)
    return evaluation


def _episodes(evaluation: Evaluation) -> list[Episode]:
    workload = evaluation.workloads.get()
    video = default_storage.save("episodes/fuzz/ep.mp4", ContentFile(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 100))
    now = timezone.now()
    common = dict(evaluation=evaluation, workload=workload, steps=10, started_at=now, wall_ms=5.0, predict_ms=0.2,
                  step_ms=0.1, latency={"predict": {"60": 10}, "step": {"40": 10}})
    return Episode.objects.bulk_create([
        Episode(index=0, seed=0, status="completed", success=True, success_source="criterion", reward=1.0,
                stop_condition="terminated", terminated=True, video=video,
                video_meta={"codec": "h264", "frames": 10, "fps": 30, "width": 64, "height": 64, "bytes": 112,
                            "encodeMs": 3.5, "renderMs": 1.5}, **common),
        Episode(index=1, seed=1, status="completed", success=False, success_source="criterion", reward=0.0,
                stop_condition="time_limit", truncated=True, perturbation={"kind": "noise", "level": 0.1}, **common),
        Episode(index=2, seed=2, status="error", stop_condition="error", error="boom", **common),
    ])


def _images(tenant) -> tuple[ImageRepository, ImageVersion, ImageVersion]:
    repo = ImageRepository.objects.create(namespace=tenant.org.slug, name="my-env", kind="env")
    current = ImageVersion.objects.create(repository=repo, digest="sha256:" + "3" * 64, source="python://x:Y", tags=["latest"],
                                          scenarios=[{"id": "classic/CartPole-v1", "name": "CartPole", "instruction": "balance"}])
    deleted = ImageVersion.objects.create(repository=repo, digest="sha256:" + "4" * 64, source="python://x:Y",
                                          probe_status=ProbeStatus.DELETED)
    repo.current_version = current
    repo.save()
    return repo, current, deleted


@pytest.fixture
def world(tenant_a, settings):
    """The seeded organization A; yields the member API key."""
    settings.RLMESH_REGISTRY_HOST = "127.0.0.1:9"  # nothing listens: deleting a version's manifest is best effort
    running = _evaluation(tenant_a, status=EvaluationStatus.RUNNING)
    finished = _evaluation(tenant_a, status=EvaluationStatus.COMPLETED, finished_at=timezone.now(), tags=NIGHTLY,
                           created_at=timezone.now() - timedelta(hours=1))
    later = _evaluation(tenant_a, status=EvaluationStatus.COMPLETED, finished_at=timezone.now(), tags=NIGHTLY)
    episodes = _episodes(running)
    for evaluation in (finished, later):
        _episodes(evaluation)
    Baseline.objects.create(organization=tenant_a.org, tag_key="suite", tag_value="nightly", evaluation=finished)
    EvaluationLog.objects.bulk_create(EvaluationLog(evaluation=running, source="worker", message=f"line {i}") for i in range(3))
    Shard.objects.filter(evaluation=running).update(started_at=timezone.now(), timings={"envStartSeconds": [0.5],
                                                                                       "modelStartSeconds": [0.7]})
    repo, current, deleted = _images(tenant_a)
    REAL.clear()
    REAL.update(
        public_id=[running.public_id, finished.public_id, later.public_id],
        episode_id=[episodes[0].pk, episodes[1].pk],
        reference=[repo.path, f"{repo.path}:latest", f"{repo.path}@{deleted.digest}", "prebuilt/ppo/cartpole"],
        name=[repo.path],
        digest=[current.digest, deleted.digest],
        tag=["suite:nightly", "suite:weekly"],
        # Query and body values: comparison sides (``eval`` and ``eval:model``) and a baseline's evaluation.
        side=[running.public_id, f"{later.public_id}:{HEURISTICS}", finished.public_id],
        evaluation=[finished.public_id, later.public_id],
    )
    # Django's test client keeps the connection open across requests; a bare WSGI call would close it (and with
    # it the test's transaction) when each request ends.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield tenant_a.key
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


#: Header values worth sending besides generated ones: a video's ranges (206). The 416 past its 112 bytes is
#: test_schema_contract's (a range outside the file is no valid request).
HEADERS = {"Range": ["bytes=0-9", "bytes=-10"]}


def _real_or_generated(values: dict, real: dict[str, list]) -> st.SearchStrategy:
    """Each key of ``real`` in ``values`` is one of its real values or the generated one (real ones first, so
    shrinking ends on them)."""
    return st.fixed_dictionaries({k: st.sampled_from([*real[k], v]) if k in real else st.just(v)
                                  for k, v in values.items()})


@schema.hook
def flatmap_case(context, case):
    """Positive cases only (a negative case's mutated value must reach the API as generated): path parameters are
    seeded ids or generated ones; a comparison's ``a``/``b`` are seeded sides; a baseline's ``evaluation`` a seeded
    completed evaluation; ``Range`` a real range. A generated ``cursor`` is dropped: a cursor is what the server
    hands out (``nextCursor``), and one a client makes up is a 400 (tests/api/test_evaluations_api.py)."""
    if case.meta is None or case.meta.generation.mode.is_negative:
        return st.just(case)
    parts = []
    if case.path_parameters:
        parts.append(_real_or_generated(case.path_parameters, REAL).map(lambda v: ("path_parameters", v)))
    if case.query:
        query = {k: v for k, v in case.query.items() if k != "cursor"}
        parts.append(_real_or_generated(query, {"a": REAL["side"], "b": REAL["side"]}).map(lambda v: ("query", v)))
    if isinstance(case.body, dict) and "evaluation" in case.body:
        parts.append(_real_or_generated(case.body, {"evaluation": REAL["evaluation"]}).map(lambda v: ("body", v)))
    if case.headers and "Range" in case.headers:
        parts.append(_real_or_generated(case.headers, HEADERS).map(lambda v: ("headers", v)))

    def apply(changes):
        for attr, value in changes:
            setattr(case, attr, value)
        return case

    return st.tuples(*parts).map(apply) if parts else st.just(case)


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


#: Every check runs on every operation except one check on these five: whether their body is acceptable depends
#: on what is stored, which no schema states (a model and env reference must name images the organization has and
#: a taskId a scenario of that env; a bundle must be a zip rlmesh.Recorder.export() wrote). A schema-valid body
#: naming nothing that exists is a 400 at the path of the reference (tests/api/test_evaluations_api.py and the
#: agents and import tests), so ``positive_data_acceptance`` is left out for them; everything else still runs.
STATE_DEPENDENT_BODIES = {("POST", "/v1/evaluations"), ("POST", "/v1/evaluation-previews"),
                          ("POST", "/agents/evaluations/run"), ("POST", "/agents/runs/open"),
                          ("POST", "/v1/evaluations/imports")}


@schema.parametrize()
# ``world`` is seeded once per operation, not per example: state carries over between examples (a cancel, a
# delete), as it would for a client.
@hypothesis_settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_every_operation_conforms_to_its_schema(case, world):
    excluded = [positive_data_acceptance] if (case.method, case.path) in STATE_DEPENDENT_BODIES else []
    case.call_and_validate(headers={"Authorization": f"Bearer {world}"}, additional_checks=[error_envelope],
                           excluded_checks=excluded)
