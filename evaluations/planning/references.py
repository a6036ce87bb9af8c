"""Step 2 of planning: resolve the request's model references to usable image versions, and — for a request that
already failed the schema — find its unknown model and env references too, so one response lists every bad field."""

from __future__ import annotations

from dataclasses import dataclass

from ..choices import ImageKind
from ..models import Organization
from ..crypto import encrypt
from ..prebuilt.catalog import AGENT_ENDPOINT_MODEL, OPENPI_ENDPOINT_MODEL
from ..services.image_versions import ReferenceError_, resolve_reference
from ..services.weights import weights_problem
from .parse import model_path
from .agent_runs import EndpointImage
from .redaction import REDACTED
from .plan import PlannedModel

__all__ = ["EndpointModel", "endpoint_model", "reference_errors", "resolve_models"]


def resolve_models(data: dict, entries: list[dict], *, organization: Organization, errors: list[dict],
                   warnings: list[str]) -> list[PlannedModel | None]:
    """One PlannedModel per schema-valid model entry (None where its reference does not resolve, with the error
    appended). Warns about ``envVars`` on trusted sources (they run on the worker host, where variables such as
    ``PYTHONWARNINGS`` or ``LD_PRELOAD`` would run code, so only containers receive them) and about models listed
    twice (their scores are merged)."""
    models: list[PlannedModel | None] = []
    for i, entry in enumerate(entries):
        if entry.get("endpoint"):
            models.append(endpoint_model(data, i, entry, organization=organization, errors=errors))
            continue
        try:
            image = resolve_reference(entry["model"], kind=ImageKind.MODEL, organization=organization)
        except ReferenceError_ as exc:
            errors.append({"path": model_path(data, i), "message": str(exc)})
            models.append(None)
            continue
        problem = weights_problem(image.version.checkpoints, image.checkpoint)
        if problem:
            errors.append({"path": model_path(data, i), "message": f"{entry['model']}: {problem}"})
            models.append(None)
            continue
        if image.version.repository.path == AGENT_ENDPOINT_MODEL:
            errors.append({"path": model_path(data, i), "message": f"{AGENT_ENDPOINT_MODEL} is the bridge to an agent "
                           "served at its own endpoint: start those runs with POST /agents/evaluations/run"})
            models.append(None)
            continue
        if image.version.repository.path == OPENPI_ENDPOINT_MODEL:
            errors.append({"path": model_path(data, i), "message": f"{OPENPI_ENDPOINT_MODEL} is the bridge to a "
                           'policy server: name the server instead, {"model": "<label>", "endpoint": {"url": '
                           '"ws://host:port", "protocol": "openpi"}}'})
            models.append(None)
            continue
        model = PlannedModel(image=image, requested_env_vars=entry.get("envVars", {}))
        if model.requested_env_vars and not model.env_vars:
            warnings.append(f"models[{i}].envVars: {image.reference} runs on the worker host, not in a container; "
                            "its envVars are ignored (they reach only your own images)")
        models.append(model)
    seen = [e["model"] for e in entries]
    for ref in sorted({r for r in seen if seen.count(r) > 1}):
        warnings.append(f'model "{ref}" is listed more than once; its scores are merged')
    return models


@dataclass(frozen=True)
class EndpointModel(PlannedModel):
    """A policy server named by a model entry's ``endpoint``: the openpi bridge's image labelled with ``model``, its
    ``load`` kwargs the endpoint's settings, its key kept for the model server only (encrypted)."""

    key: str = ""

    def secret(self) -> str:
        return encrypt(self.key) if self.key else ""

    def config(self) -> dict:
        endpoint = {**self.image.endpoint, "protocol": "openpi",  # type: ignore[attr-defined]
                    "key": REDACTED if self.key else None}
        return {**super().config(), "repository": OPENPI_ENDPOINT_MODEL, "endpoint": endpoint}


def endpoint_model(data: dict, i: int, entry: dict, *, organization: Organization,
                   errors: list[dict]) -> PlannedModel | None:
    """The PlannedModel of an ``endpoint`` entry (the bridge's current version, its settings as ``load`` kwargs),
    or None with the error appended when the bridge is not in the catalog."""
    try:
        bridge = resolve_reference(OPENPI_ENDPOINT_MODEL, kind=ImageKind.MODEL, organization=organization)
    except ReferenceError_ as exc:
        errors.append({"path": f"{model_path(data, i).removesuffix('.model')}.endpoint", "message": str(exc)})
        return None
    endpoint = entry["endpoint"]
    settings = {"url": endpoint["url"], "replan_steps": endpoint["replanSteps"], "image_size": endpoint["imageSize"],
                "timeout_seconds": endpoint["timeoutSeconds"]}
    image = EndpointImage(reference=entry["model"], version=bridge.version, checkpoint=None, endpoint=settings)
    return EndpointModel(image=image, requested_env_vars=entry.get("envVars", {}), key=endpoint.get("key") or "")


def _error(ref, kind: str, path: str, organization: Organization) -> dict | None:
    if not isinstance(ref, str):
        return None
    try:
        image = resolve_reference(ref, kind=kind, organization=organization)
    except ReferenceError_ as exc:
        return {"path": path, "message": str(exc)}
    problem = weights_problem(image.version.checkpoints, image.checkpoint)
    return {"path": path, "message": f"{ref}: {problem}"} if problem else None


def reference_errors(normalized: dict, data: dict, *, organization: Organization, reported: set[str]) -> list[dict]:
    """Best-effort reference errors for a request that failed the schema: unknown models/envs whose own field was
    well-formed, and models whose installed weights are missing (paths not already ``reported``)."""
    entries = normalized.get("models") if "models" in data else [normalized.get("model")]
    candidates = [(e.get("model") if isinstance(e, dict) and not e.get("endpoint") else None, ImageKind.MODEL,
                   model_path(data, i)) for i, e in enumerate(entries if isinstance(entries, list) else [])]
    tasks = normalized.get("tasks")
    candidates += [(t.get("env") if isinstance(t, dict) else None, ImageKind.ENV, f"tasks[{i}].env")
                   for i, t in enumerate(tasks if isinstance(tasks, list) else [])]
    found = (_error(ref, kind, path, organization) for ref, kind, path in candidates if path not in reported)
    return [e for e in found if e]
