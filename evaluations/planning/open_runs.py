"""An open run (``POST /agents/runs/open``, seed 004): a free-text ``task_definition`` on an env that takes one
(its catalog has a scenario marked ``open``, e.g. the shop's ``shop.open``), becomes the same kind of
:class:`~evaluations.planning.agent_runs.AgentPlan` as a catalog run: one task of ``rollouts`` episodes for the
endpoint bridge, whose env make kwargs carry the task definition, the profile and the request's verifiers.

How a rollout is judged, in order: the request's ``verifiers`` (checked here against the env's vocabulary, e.g.
``shop.state.v1``; every invalid one is a 400 with its path), else the ``judge`` endpoint (its key encrypted in
``Evaluation.judge_key``; called by :mod:`evaluations.runs.judging`), else the rollout is recorded unverified.
Writes nothing; raises :class:`RequestInvalid` listing every problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.conf import settings
from rest_framework import serializers

from ..agents.validation import validate_additional_params, validate_endpoint_url, validate_key
from ..choices import ImageKind
from ..crypto import encrypt
from ..models import Organization
from ..prebuilt.shop.checks import VOCABULARY as SHOP_VOCABULARY
from ..prebuilt.shop.checks import validate as validate_shop_checks
from ..services.image_versions import ReferenceError_, resolve_reference
from .agent_runs import AGENT_MODEL, AgentModel, AgentPlan, AgentTask, EndpointImage, bridge_config, \
    endpoint_checks, request_timeout, agent_env_reference, is_agent_scenario, redacted_request
from .agent_schema import MAX_KEY_BYTES, MAX_PARAMS_BYTES, MAX_STEPS, EndpointSerializer
from .parse import RequestInvalid
from .schema import DisplayTextField, StrictCharField, StrictIntegerField, flatten_errors, unknown_fields_ignored

__all__ = ["MAX_DEFINITION_CHARS", "MAX_ROLLOUTS", "OpenRunRequestSerializer", "plan_open_run"]

MAX_DEFINITION_CHARS = 2000
MAX_ROLLOUTS = 100
#: Verifier vocabularies an env's open scenario may name → their validator (``[{"path", "message"}]``).
VOCABULARIES = {SHOP_VOCABULARY: validate_shop_checks}


class JudgeSerializer(serializers.Serializer):
    """An OpenAI-compatible chat endpoint that judges each rollout of an open run without verifiers."""

    url = StrictCharField(max_length=2048, trim_whitespace=False, help_text=(
        "`https://…`/`http://…`, an OpenAI-compatible base URL (`{url}/v1/chat/completions`); the same address "
        "rules as `endpoint.url`."))
    key = StrictCharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False, default=None,
                          help_text="Sent as `Authorization: Bearer <key>`; stored encrypted, never returned.")
    model = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=300, default=None,
                            help_text="The chat `model` (default `judge`).")
    additional_params = serializers.JSONField(required=False, allow_null=True, default=None, help_text=(
        "A JSON object merged into the judge's request (e.g. `temperature`); at most 16 KB."))

    def validate_key(self, value):
        if value is not None and len(value.encode("utf-8")) > MAX_KEY_BYTES:
            raise serializers.ValidationError(f"at most {MAX_KEY_BYTES} bytes")
        return value


class OpenRunRequestSerializer(serializers.Serializer):
    """An open run: ``rollouts`` rollouts of the agent at ``endpoint`` on a free-text task."""

    env_id = StrictCharField(max_length=300, help_text="An env that takes open tasks: `shop` (= `prebuilt/shop`).")
    task_definition = DisplayTextField(min_length=1, max_length=MAX_DEFINITION_CHARS, help_text=(
        f"The task in free text, 1–{MAX_DEFINITION_CHARS} characters (the agent's GOAL)."))
    max_steps = StrictIntegerField(required=False, allow_null=True, default=None, min_value=1, max_value=MAX_STEPS,
                                   help_text="Step cap per rollout (default: the env's, 20 for the shop).")
    profile_id = StrictCharField(required=False, allow_null=True, default=None, max_length=100, help_text=(
        "The user signed in (shop: `U_001` … `U_050`; default `U_001`)."))
    rollouts = StrictIntegerField(required=False, default=1, min_value=1, max_value=MAX_ROLLOUTS,
                                  help_text=f"Rollouts (1–{MAX_ROLLOUTS}; seeds seed, seed+1, …).")
    endpoint = EndpointSerializer()
    webhook_url = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=2048, default=None,
                                  help_text="http(s) URL receiving the signed status document when the run ends.")
    model = DisplayTextField(required=False, allow_null=True, max_length=200, default=None, help_text=(
        "Extension: the agent's label in results (default: `endpoint.model`, else `agent`)."))
    verifiers = serializers.ListField(child=serializers.JSONField(), required=False, allow_null=True, default=None,
                                      help_text=("Extension: checks on the final state in the env's vocabulary "
                                                 "(shop: `shop.state.v1`, see /docs/using/shop/); all must pass."))
    judge = JudgeSerializer(required=False, allow_null=True, default=None, help_text=(
        "Extension: judges rollouts when no verifiers are sent; without both, rollouts are `unverified`."))
    seed = StrictIntegerField(required=False, default=0, min_value=0, max_value=2**31 - 1,
                              help_text="Extension: the first rollout's seed.")
    workers = StrictIntegerField(required=False, default=1, min_value=1, help_text=(
        "Extension: concurrent environments (each its own browser), at most the rollouts."))


def open_unknown_field_warnings(data) -> list[str]:
    """Warnings for fields the open-run request does not know (top level, ``endpoint`` and ``judge``)."""
    unknown = [k for k in data if k not in OpenRunRequestSerializer().fields]
    for name, serializer in (("endpoint", EndpointSerializer), ("judge", JudgeSerializer)):
        if isinstance(data.get(name), dict):
            known = set(serializer().fields)
            unknown += [f"{name}.{k}" for k in data[name] if k not in known]
    return unknown_fields_ignored(unknown)


def _open_scenario(req: dict, organization: Organization, errors: list[dict]):
    """``(env, its open scenario)``, or errors on ``env_id``."""
    try:
        env = resolve_reference(agent_env_reference(req["env_id"]), kind=ImageKind.ENV, organization=organization)
    except ReferenceError_ as exc:
        errors.append({"path": "env_id", "message": str(exc)})
        return None, None
    scenario = next((s for s in env.version.scenarios if is_agent_scenario(s) and s.get("open")), None)
    if scenario is None:
        errors.append({"path": "env_id", "message": f"{env.reference} takes no open tasks (its tasks are listed by "
                       "GET /agents/evaluations/tasks; use POST /agents/evaluations/run)"})
    return env, scenario


def _open_checks(req: dict, raw: dict, spec: dict, errors: list[dict]) -> str:
    """Profile, verifiers and judge errors; returns the profile id to sign in."""
    profile = req.get("profile_id") or spec.get("defaultProfile") or ""
    profiles = spec.get("profiles") or []
    if profiles and profile not in profiles:
        errors.append({"path": "profile_id", "message": f"unknown profile {profile!r} (one of {profiles[0]} … "
                       f"{profiles[-1]})"})
    if req.get("verifiers") == []:
        errors.append({"path": "verifiers", "message": "must list at least one check (or leave verifiers out)"})
    elif req.get("verifiers") is not None:
        validator = VOCABULARIES.get(spec.get("vocabulary"))
        if validator is None:
            errors.append({"path": "verifiers", "message": "this env takes no verifiers (use a judge)"})
        else:
            errors += validator(req["verifiers"])
    judge = raw.get("judge")
    if isinstance(judge, dict):
        allow = settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS
        url = judge.get("url")
        if isinstance(url, str) and not url.lower().startswith(("http://", "https://")):
            errors.append({"path": "judge.url", "message": "must be an http:// or https:// URL (OpenAI-compatible)"})
        else:
            errors += validate_endpoint_url(url, allow_private=allow, path="judge.url")
        errors += validate_key(judge.get("key"), path="judge.key")
        errors += validate_additional_params(judge.get("additional_params"), path="judge.additional_params")
        params = judge.get("additional_params")
        if params is not None and len(json.dumps(params, ensure_ascii=False).encode()) > MAX_PARAMS_BYTES:
            errors.append({"path": "judge.additional_params", "message": f"at most {MAX_PARAMS_BYTES} bytes of JSON"})
    if req["rollouts"] > settings.RLMESH_MAX_EPISODES_PER_TASK:
        errors.append({"path": "rollouts", "message": f"at most {settings.RLMESH_MAX_EPISODES_PER_TASK} rollouts"})
    if req["workers"] > settings.RLMESH_MAX_WORKERS_PER_TASK:
        errors.append({"path": "workers", "message": f"at most {settings.RLMESH_MAX_WORKERS_PER_TASK} workers"})
    return profile


@dataclass
class OpenPlan(AgentPlan):
    """An agent plan that also stores the judge's key (encrypted)."""

    judge_key: str = ""

    def evaluation_fields(self) -> dict:
        return {**super().evaluation_fields(), "judge_key": encrypt(self.judge_key)}


def _validated(data: dict) -> dict:
    serializer = OpenRunRequestSerializer(data=data)
    if not serializer.is_valid():
        raise RequestInvalid(flatten_errors(serializer.errors))
    return serializer.validated_data


def _stored(data: dict) -> dict:
    """The request as stored and shown: the endpoint's and the judge's keys replaced by ``***``."""
    stored = redacted_request(data)
    judge = stored.get("judge")
    if isinstance(judge, dict) and judge.get("key"):
        stored = {**stored, "judge": {**judge, "key": "***"}}
    return stored


def plan_open_run(data: dict, *, organization: Organization) -> OpenPlan:
    """Validate a parsed open-run request and expand it into an :class:`OpenPlan`. Writes nothing.

    Raises RequestInvalid listing every problem with its JSON path (``profile_id``, ``verifiers[2].op``)."""
    warnings = open_unknown_field_warnings(data)
    req = _validated(data)
    errors: list[dict] = []
    endpoint_checks(req, data, errors)
    env, scenario = _open_scenario(req, organization, errors)
    profile = _open_checks(req, data, (scenario or {}).get("open") or {}, errors) if scenario else ""
    try:
        bridge = resolve_reference(AGENT_MODEL, kind=ImageKind.MODEL, organization=organization)
    except ReferenceError_ as exc:
        errors.append({"path": "$", "message": f"agent runs are not available: {exc}"})
    if errors:
        raise RequestInvalid(errors)
    endpoint, judge = req["endpoint"], req.get("judge")
    label = req.get("model") or endpoint.get("model") or "agent"
    image = EndpointImage(reference=label, version=bridge.version, checkpoint=None, endpoint=bridge_config(endpoint))
    model = AgentModel(image=image, requested_env_vars={}, key_set=bool(endpoint.get("key")))
    max_steps = req.get("max_steps") or int(scenario.get("maxSteps") or 20)
    kwargs = {**scenario.get("params", {}), "task_definition": req["task_definition"], "profile_id": profile,
              "max_steps": max_steps, "verifiers": json.dumps(req["verifiers"]) if req.get("verifiers") else ""}
    if endpoint.get("minimal_observation") is False:
        kwargs["screenshot"] = True
    rollouts = req["rollouts"]
    task = AgentTask(env=env, task_id=scenario["id"], scenario=scenario, perturbation="none", record="none",
                     episodes=rollouts, seed=req["seed"], workers=min(req["workers"], rollouts), max_steps=max_steps,
                     env_kwargs=kwargs)
    judged = "verifiers" if req.get("verifiers") else "judge" if judge else "none"
    agent = {"envId": req["env_id"], "model": label, "taskIds": [scenario["id"]], "rolloutsPerExample": rollouts,
             "webhookUrl": req.get("webhook_url") or None, "endpoint": model.config()["endpoint"],
             "requestTimeoutSeconds": request_timeout(), "open": {
                 "taskDefinition": req["task_definition"], "profileId": profile, "maxSteps": max_steps,
                 "verifiers": req.get("verifiers"), "judgedBy": judged},
             "judge": None if not judge else {"url": judge["url"], "model": judge.get("model") or None,
                                              "additional_params": judge.get("additional_params"),
                                              "key": "***" if judge.get("key") else None}}
    return OpenPlan(
        data=_stored(data), name="", tags={"api": "agents", "run": "open"},
        metadata={"evaluationLabel": f"{label} on {req['env_id']} (open run)"}, timeout_seconds=None,
        models=[model], tasks=[task], warnings=warnings, endpoint_key=endpoint.get("key") or "",
        webhook_url=req.get("webhook_url") or "", agent=agent, judge_key=(judge or {}).get("key") or "",
    )
