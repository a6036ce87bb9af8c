"""Planning: a request becomes a :class:`Plan` (resolved models and tasks, workloads, effective config, estimates),
or a :class:`RequestInvalid` listing every problem with its JSON path. Writes nothing; preview, submit and the
dashboard all call :func:`plan_evaluation`.

The steps, one module each: ``parse`` (JSON body) → ``schema`` (types, unknown fields) → ``references`` (models) →
``tasks`` (per-task checks, caps) → ``compatibility`` (model × task) → ``plan`` (expansion and config).
"""

from __future__ import annotations

from ..models import Organization
from .compatibility import compatibility_errors, compatibility_warnings
from .limits import refuse_oversized_evaluation
from .parse import MAX_JSON_DEPTH, RequestInvalid, check_json_values, parse_request_body
from .plan import Plan, PlannedModel, PlannedTask, PlannedWorkload, live_warnings, no_worker_warning, shard_ranges
from .references import reference_errors, resolve_models
from .schema import EvaluationRequestSerializer, flatten_errors, unknown_field_warnings
from .tasks import check_tasks

__all__ = [
    "MAX_JSON_DEPTH",
    "Plan",
    "PlannedModel",
    "PlannedTask",
    "PlannedWorkload",
    "RequestInvalid",
    "check_json_values",
    "live_warnings",
    "no_worker_warning",
    "parse_request_body",
    "plan_evaluation",
    "shard_ranges",
]


def _normalize(data: dict) -> dict:
    """The request with model shorthands spelled out: a string model entry becomes ``{"model": <string>}``."""
    normalized = dict(data)
    if isinstance(normalized.get("models"), list):
        normalized["models"] = [{"model": m} if isinstance(m, str) else m for m in normalized["models"]]
    if isinstance(normalized.get("model"), str):
        normalized["model"] = {"model": normalized["model"]}
    return normalized


def validate_schema(data: dict, *, organization: Organization) -> dict:
    """The schema-valid request (defaults applied, ``model`` folded into ``models``); RequestInvalid listing every
    schema problem plus the unknown references the request names."""
    normalized = _normalize(data)
    serializer = EvaluationRequestSerializer(data=normalized)
    if not serializer.is_valid():
        errors = flatten_errors(serializer.errors)
        reported = {e["path"] for e in errors}
        raise RequestInvalid(errors + reference_errors(normalized, data, organization=organization, reported=reported))
    return serializer.validated_data


def plan_evaluation(data: dict, *, organization: Organization) -> Plan:
    """Validate ``data`` (a parsed request object) and expand it into a :class:`Plan`. Writes nothing.

    Raises RequestInvalid listing every problem found, each with its JSON path; a request over the workload or
    episode caps by its counts alone is refused first, before any per-model or per-task work (``planning.limits``).
    """
    refuse_oversized_evaluation(data)
    warnings = unknown_field_warnings(data)
    req = validate_schema(data, organization=organization)
    errors: list[dict] = []
    models = resolve_models(data, req["models"], organization=organization, errors=errors, warnings=warnings)
    tasks = check_tasks(req["tasks"], models=len(req["models"]), organization=organization, errors=errors, warnings=warnings)
    errors += compatibility_errors(data, models, tasks)
    warnings += compatibility_warnings(data, models, tasks)
    if errors:
        raise RequestInvalid(errors)
    return Plan(
        data=data, name=req.get("name", ""), tags=req.get("tags", {}), metadata=req.get("metadata", {}),
        timeout_seconds=req.get("timeoutSeconds"), models=models, tasks=tasks, warnings=warnings,
    )
