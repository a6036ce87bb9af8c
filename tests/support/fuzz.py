"""The world tests/api/test_schema_fuzz.py fuzzes (and ``python -m tests.support.schema_fuzz_cli``, the same run
through schemathesis's command line): what is seeded, the real values put into positive cases, and the operations
whose bodies only stored state can validate."""

from __future__ import annotations

import json
from datetime import timedelta

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone
from hypothesis import strategies as st

from evaluations.choices import EvaluationStatus, ProbeStatus
from evaluations.models import Baseline, Episode, Evaluation, EvaluationLog, ImageRepository, ImageVersion, Shard
from evaluations.planning import plan_evaluation
from evaluations.runs.lifecycle import create_evaluation
from tests.conftest import cartpole_request

__all__ = ["HEADERS", "STATE_DEPENDENT_BODIES", "real_values_in_positive_cases", "seed_world"]

NIGHTLY = {"suite": "nightly"}
HEURISTICS = "prebuilt/classic-control-heuristics"

#: Every check runs on every operation except one check on these five: whether their body is acceptable depends
#: on what is stored, which no schema states (a model and env reference must name images the organization has and
#: a taskId a scenario of that env; a bundle must be a zip rlmesh.Recorder.export() wrote). A schema-valid body
#: naming nothing that exists is a 400 at the path of the reference (tests/api/test_evaluations_api.py and the
#: agents and import tests), so ``positive_data_acceptance`` is left out for them; everything else still runs.
STATE_DEPENDENT_BODIES = {("POST", "/v1/evaluations"), ("POST", "/v1/evaluation-previews"),
                          ("POST", "/agents/evaluations/run"), ("POST", "/agents/runs/open"),
                          ("POST", "/v1/evaluations/imports")}


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


def seed_world(tenant) -> dict[str, list]:
    """Seed the world into ``tenant``'s organization; returns the real values per parameter name."""
    running = _evaluation(tenant, status=EvaluationStatus.RUNNING)
    finished = _evaluation(tenant, status=EvaluationStatus.COMPLETED, finished_at=timezone.now(), tags=NIGHTLY,
                           created_at=timezone.now() - timedelta(hours=1))
    later = _evaluation(tenant, status=EvaluationStatus.COMPLETED, finished_at=timezone.now(), tags=NIGHTLY)
    episodes = _episodes(running)
    for evaluation in (finished, later):
        _episodes(evaluation)
    Baseline.objects.create(organization=tenant.org, tag_key="suite", tag_value="nightly", evaluation=finished)
    EvaluationLog.objects.bulk_create(EvaluationLog(evaluation=running, source="worker", message=f"line {i}") for i in range(3))
    Shard.objects.filter(evaluation=running).update(started_at=timezone.now(), timings={"envStartSeconds": [0.5],
                                                                                       "modelStartSeconds": [0.7]})
    repo, current, deleted = _images(tenant)
    return dict(
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


#: Header values worth sending besides generated ones: a video's ranges (206). The 416 past its 112 bytes is
#: test_schema_contract's (a range outside the file is no valid request).
HEADERS = {"Range": ["bytes=0-9", "bytes=-10"]}


def _real_or_generated(values: dict, real: dict[str, list]) -> st.SearchStrategy:
    """Each key of ``real`` in ``values`` is one of its real values or the generated one (real ones first, so
    shrinking ends on them)."""
    return st.fixed_dictionaries({k: st.sampled_from([*real[k], v]) if k in real else st.just(v)
                                  for k, v in values.items()})


def real_values_in_positive_cases(case, real: dict[str, list]) -> st.SearchStrategy:
    """A strategy of ``case`` with real values (``real``, from seed_world) put in. Positive cases only (a negative case's mutated value must reach the API as generated): path parameters are
    seeded ids or generated ones; a comparison's ``a``/``b`` are seeded sides; a baseline's ``evaluation`` a seeded
    completed evaluation; ``Range`` a real range."""
    if case.meta is None or case.meta.generation.mode.is_negative:
        return st.just(case)
    parts = []
    if case.path_parameters:
        parts.append(_real_or_generated(case.path_parameters, {k: v for k, v in real.items() if k in case.path_parameters}).map(lambda v: ("path_parameters", v)))
    if case.query:
        parts.append(_real_or_generated(case.query, {"a": real["side"], "b": real["side"]}).map(lambda v: ("query", v)))
    if isinstance(case.body, dict) and "evaluation" in case.body:
        parts.append(_real_or_generated(case.body, {"evaluation": real["evaluation"]}).map(lambda v: ("body", v)))
    if case.headers and "Range" in case.headers:
        parts.append(_real_or_generated(case.headers, HEADERS).map(lambda v: ("headers", v)))

    def apply(changes):
        for attr, value in changes:
            setattr(case, attr, value)
        return case

    return st.tuples(*parts).map(apply) if parts else st.just(case)
