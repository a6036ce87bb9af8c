"""A seed-004 run request becomes the same :class:`~evaluations.planning.plan.Plan` as a ``/v1`` request.

The agent is one model, ``prebuilt/agent-endpoint`` (the endpoint bridge), whose ``load`` kwargs are the endpoint's
config without the key; each task id is one task of ``rollouts_per_example`` episodes on its scenario, seeded by an
optional ``.sNNNN`` suffix (else 0), capped at ``max_steps`` (else the task's own), with a screenshot in the
observation when ``minimal_observation`` is false. The key travels only encrypted (``Evaluation.endpoint_key``);
the stored request has it replaced by ``***``. Writes nothing; raises :class:`RequestInvalid` listing every problem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from django.conf import settings

from ..agents.validation import validate_endpoint, validate_endpoint_url
from ..choices import ImageKind
from ..crypto import encrypt
from ..models import Organization
from ..prebuilt.catalog import AGENT_ENDPOINT_MODEL
from ..services.image_versions import ReferenceError_, ResolvedImage, resolve_reference
from .agent_schema import MAX_PARAMS_BYTES, AgentRunRequestSerializer, agent_unknown_field_warnings
from .limits import agent_run_size_errors, refuse_oversized_agent_run
from .parse import RequestInvalid
from .plan import Plan, PlannedModel, PlannedTask
from .redaction import REDACTED
from .schema import flatten_errors

__all__ = ["AGENT_MODEL", "AgentPlan", "agent_env_reference", "is_agent_scenario", "plan_agent_run", "split_task_id"]

#: The bridge every agent run's model is.
AGENT_MODEL = AGENT_ENDPOINT_MODEL
_SEEDED = re.compile(r"^(?P<scenario>.+)\.s(?P<seed>\d{1,9})$")


def agent_env_reference(env_id: str) -> str:
    """The env reference an ``env_id`` names: a bare name is a prebuilt env (``miniwob`` → ``prebuilt/miniwob``)."""
    return env_id if "/" in env_id else f"prebuilt/{env_id}"


def is_agent_scenario(scenario: dict | None) -> bool:
    """Whether a catalog scenario is a task for agents (it declares the tools it needs)."""
    return bool(scenario and scenario.get("tools"))


def split_task_id(task_id: str, scenarios: dict[str, dict]) -> tuple[dict, int] | None:
    """``(scenario, seed)`` of a task id: the scenario itself (seed 0) or ``<scenario>.sNNNN``; None if unknown."""
    if task_id in scenarios:
        return scenarios[task_id], 0
    match = _SEEDED.match(task_id)
    if match and match["scenario"] in scenarios:
        return scenarios[match["scenario"]], int(match["seed"])
    return None


@dataclass(frozen=True)
class EndpointImage(ResolvedImage):
    """The bridge's image, labelled with the agent's name; its ``load`` kwargs are the endpoint config."""

    endpoint: dict = field(default_factory=dict)

    @property
    def load_kwargs(self) -> dict:
        return dict(self.endpoint)


@dataclass(frozen=True)
class AgentModel(PlannedModel):
    key_set: bool = False

    def config(self) -> dict:
        endpoint = {**self.image.endpoint, "key": REDACTED if self.key_set else None}  # type: ignore[attr-defined]
        return {**super().config(), "repository": AGENT_MODEL, "endpoint": endpoint}


@dataclass(frozen=True)
class AgentTask(PlannedTask):
    """A task id of the run: the scenario it names (the workload's ``scenario``) and its tools."""

    @property
    def scenario_name(self) -> str:
        return self.scenario["id"] if self.scenario else self.task_id

    def config(self) -> dict:
        return {**super().config(), "tools": list((self.scenario or {}).get("tools") or [])}


@dataclass
class AgentPlan(Plan):
    """A run's plan: a Plan plus what only agent runs store (the encrypted key, the webhook URL)."""

    endpoint_key: str = ""
    webhook_url: str = ""
    agent: dict = field(default_factory=dict)

    @property
    def config(self) -> dict:
        # Endpoint errors are the agent's outcome (task_outcome "error"), not the platform's: the run completes.
        return {**super().config, "requestTimeoutSeconds": self.agent["requestTimeoutSeconds"],
                "maxErrorFraction": 1.0, "agent": self.agent}

    def evaluation_fields(self) -> dict:
        return {**super().evaluation_fields(), "endpoint_key": encrypt(self.endpoint_key),
                "webhook_url": self.webhook_url}


def endpoint_checks(req: dict, raw: dict, errors: list[dict]) -> None:
    allow = settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS
    errors += validate_endpoint(raw.get("endpoint"), allow_private=allow)
    params = req["endpoint"].get("additional_params")
    if params is not None and len(json.dumps(params, ensure_ascii=False).encode()) > MAX_PARAMS_BYTES:
        errors.append({"path": "endpoint.additional_params", "message": f"at most {MAX_PARAMS_BYTES} bytes of JSON"})
    hook = req.get("webhook_url")
    if hook:
        if not hook.lower().startswith(("http://", "https://")):
            errors.append({"path": "webhook_url", "message": "must be an http:// or https:// URL"})
        else:
            errors += validate_endpoint_url(hook, allow_private=allow, path="webhook_url")


def _resolve(req: dict, organization: Organization, errors: list[dict]) -> tuple[ResolvedImage | None, dict]:
    """The env and its agent scenarios by id (error on ``env_id`` when unknown or without tasks for agents)."""
    try:
        env = resolve_reference(agent_env_reference(req["env_id"]), kind=ImageKind.ENV, organization=organization)
    except ReferenceError_ as exc:
        errors.append({"path": "env_id", "message": str(exc)})
        return None, {}
    scenarios = {s["id"]: s for s in env.version.scenarios if is_agent_scenario(s)}
    if not scenarios:
        errors.append({"path": "env_id", "message": f"{env.reference} has no tasks for agents"})
    return env, scenarios


def _task_errors(req: dict, scenarios: dict, errors: list[dict]) -> list[tuple[str, dict, int]]:
    ids = req["task_ids"]
    if not ids:
        errors.append({"path": "task_ids", "message": "must list at least one task id"})
    found, seen = [], set()
    for i, task_id in enumerate(ids):
        if task_id in seen:
            errors.append({"path": f"task_ids[{i}]", "message": f'"{task_id}" is listed twice'})
            continue
        seen.add(task_id)
        hit = split_task_id(task_id, scenarios) if scenarios else None
        if scenarios and hit is None:
            errors.append({"path": f"task_ids[{i}]", "message": f'unknown task "{task_id}" (see GET '
                           "/agents/evaluations/tasks; a seed is given as <task>.sNNNN)"})
        elif hit and hit[0].get("open"):  # the open-run task takes a task_definition, not a catalog id
            errors.append({"path": f"task_ids[{i}]", "message": f'"{task_id}" is the open-run task: send its '
                           "task_definition to POST /agents/runs/open"})
        elif hit:
            found.append((task_id, *hit))
    return found


def _cap_errors(req: dict, n_tasks: int, errors: list[dict]) -> None:
    errors += agent_run_size_errors(n_tasks, req["rollouts_per_example"])
    if req["workers"] > settings.RLMESH_MAX_WORKERS_PER_TASK:
        errors.append({"path": "workers", "message": f"at most {settings.RLMESH_MAX_WORKERS_PER_TASK} workers"})


def bridge_config(endpoint: dict) -> dict:
    """The bridge's ``load`` kwargs: the endpoint config without the key, with the platform's call limits."""
    config = {k: v for k, v in endpoint.items() if k != "key" and v is not None}
    return {**config, "timeout_seconds": settings.RLMESH_AGENT_CALL_TIMEOUT,
            "max_retries": settings.RLMESH_AGENT_CALL_RETRIES, "backoff_seconds": settings.RLMESH_AGENT_CALL_BACKOFF}


def request_timeout() -> float:
    """Seconds one predict may take: every attempt of one endpoint call, their backoffs, and a margin."""
    retries = settings.RLMESH_AGENT_CALL_RETRIES
    backoff = sum(min(settings.RLMESH_AGENT_CALL_BACKOFF * 2**n, 30.0) for n in range(retries))
    return settings.RLMESH_AGENT_CALL_TIMEOUT * (retries + 1) + backoff + 30.0


def redacted_request(data: dict) -> dict:
    """The request as stored and shown: ``endpoint.key`` replaced by ``***`` when set."""
    endpoint = data.get("endpoint")
    if isinstance(endpoint, dict) and endpoint.get("key"):
        return {**data, "endpoint": {**endpoint, "key": REDACTED}}
    return data


def _validated(data: dict) -> dict:
    serializer = AgentRunRequestSerializer(data=data)
    if not serializer.is_valid():
        raise RequestInvalid(flatten_errors(serializer.errors))
    return serializer.validated_data


def _tasks(req: dict, env: ResolvedImage, found: list, screenshot: bool) -> list[AgentTask]:
    tasks = []
    for task_id, scenario, seed in found:
        max_steps = req["max_steps"] or int(scenario.get("maxSteps") or 0) or None
        kwargs = {**scenario.get("params", {}), **({"max_steps": max_steps} if max_steps else {})}
        if screenshot:
            kwargs["screenshot"] = True
        episodes = req["rollouts_per_example"]
        tasks.append(AgentTask(
            env=env, task_id=task_id, scenario=scenario, perturbation="none", record="none", episodes=episodes,
            seed=seed, workers=min(req["workers"], episodes), max_steps=max_steps, env_kwargs=kwargs))
    return tasks


def plan_agent_run(data: dict, *, organization: Organization) -> AgentPlan:
    """Validate a parsed seed-004 run request and expand it into an :class:`AgentPlan`. Writes nothing.

    Raises RequestInvalid listing every problem, each with its JSON path (``task_ids[1]``, ``endpoint.url``).
    """
    refuse_oversized_agent_run(data)  # counted before any per-task work (planning.limits)
    warnings = agent_unknown_field_warnings(data)
    req = _validated(data)
    errors: list[dict] = []
    endpoint_checks(req, data, errors)
    env, scenarios = _resolve(req, organization, errors)
    found = _task_errors(req, scenarios, errors)
    _cap_errors(req, len(req["task_ids"]), errors)
    try:
        bridge = resolve_reference(AGENT_MODEL, kind=ImageKind.MODEL, organization=organization)
    except ReferenceError_ as exc:  # the catalog is synced at migrate; absent only on a broken install
        errors.append({"path": "$", "message": f"agent runs are not available: {exc}"})
    if errors:
        raise RequestInvalid(errors)
    endpoint = req["endpoint"]
    image = EndpointImage(reference=req["model"], version=bridge.version, checkpoint=None,
                          endpoint=bridge_config(endpoint))
    model = AgentModel(image=image, requested_env_vars={}, key_set=bool(endpoint.get("key")))
    tasks = _tasks(req, env, found, screenshot=endpoint.get("minimal_observation") is False)
    stored = redacted_request(data)
    agent = {"envId": req["env_id"], "model": req["model"], "taskIds": list(req["task_ids"]),
             "rolloutsPerExample": req["rollouts_per_example"], "webhookUrl": req.get("webhook_url") or None,
             "endpoint": model.config()["endpoint"], "requestTimeoutSeconds": request_timeout()}
    return AgentPlan(
        data=stored, name="", tags={"api": "agents"},
        metadata={"evaluationLabel": f"{req['model']} on {req['env_id']}"},
        timeout_seconds=None, models=[model], tasks=tasks, warnings=warnings,
        endpoint_key=endpoint.get("key") or "", webhook_url=req.get("webhook_url") or "", agent=agent,
    )
