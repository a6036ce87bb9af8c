"""Validate an evaluation request and expand it into a plan (workloads, shards, effective config, estimates).

``plan_evaluation`` is the single validation path used by preview, submit and the dashboard; it writes
nothing. Every problem is reported with the JSON path of the offending field.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from django.conf import settings

from .. import perturbations
from ..choices import ImageKind
from ..models import Organization
from ..request_schema import EvaluationRequestSerializer, flatten_errors, unknown_field_warnings
from .catalog import ReferenceError_, ResolvedImage, resolve_reference
from ..prebuilt.catalog import ENVS_LABEL
from .compatibility import adapter_problem

__all__ = ["Plan", "PlannedWorkload", "RequestInvalid", "parse_request_body", "plan_evaluation", "shard_ranges"]


class RequestInvalid(Exception):
    """A request that cannot be run. ``errors`` is ``[{"path", "message"}]``; ``status`` the HTTP status."""

    def __init__(self, errors: list[dict], *, code: str = "invalid_request", status: int = 400):
        self.errors = errors
        self.code = code
        self.status = status
        first = errors[0]
        message = f"{first['path']}: {first['message']}" if first["path"] not in ("", "$") else first["message"]
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more)"
        super().__init__(message)


#: Deepest nesting of objects/arrays a request may have.
MAX_JSON_DEPTH = 32


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def parse_request_body(body: bytes) -> dict:
    """Decode a request body as a JSON object.

    Raises RequestInvalid for bad UTF-8 or JSON, NaN/Infinity, integers too long to convert, nesting
    deeper than ``MAX_JSON_DEPTH``, strings with lone surrogates (they cannot be stored or echoed as
    UTF-8), or a top level that is not an object.
    """
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise RequestInvalid([{"path": "$", "message": "request body is not UTF-8"}], code="parse_error") from None
    except json.JSONDecodeError as exc:
        raise RequestInvalid(
            [{"path": "$", "message": f"request body is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"}],
            code="parse_error",
        ) from None
    except RecursionError:
        raise RequestInvalid([{"path": "$", "message": f"request body nests deeper than {MAX_JSON_DEPTH} levels"}]) from None
    except ValueError as exc:  # NaN/Infinity, or an integer beyond Python's digit limit
        raise RequestInvalid([{"path": "$", "message": f"request body is not acceptable JSON: {exc}"}], code="parse_error") from None
    problem = _check_json_values(data)
    if problem:
        raise RequestInvalid([problem])
    if not isinstance(data, dict):
        raise RequestInvalid(
            [{"path": "$", "message": f"request body must be a JSON object, got {type(data).__name__ if data is not None else 'null'}"}]
        )
    return data


def _check_json_values(data) -> dict | None:
    """First problem in a parsed JSON value (too deep, or a string/key that is not valid Unicode), or None."""
    stack = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return {"path": path or "$", "message": f"nests deeper than {MAX_JSON_DEPTH} levels"}
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return {"path": path or "$", "message": "contains an unpaired surrogate (not valid Unicode)"}
        elif isinstance(value, dict):
            for key, item in value.items():
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return {"path": path or "$", "message": "has a key with an unpaired surrogate (not valid Unicode)"}
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
    return None


def shard_ranges(episodes: int, workers: int, max_per_shard: int) -> list[tuple[int, int]]:
    """Split ``range(episodes)`` into contiguous ``[start, stop)`` ranges.

    At least ``workers`` ranges (so that many can run in parallel), none longer than ``max_per_shard``,
    sizes differing by at most one. The union is always ``range(episodes)``, so sharding never changes
    which episodes (and seeds) run.
    """
    count = min(episodes, max(workers, math.ceil(episodes / max_per_shard)))
    base, extra = divmod(episodes, count)
    ranges, start = [], 0
    for i in range(count):
        stop = start + base + (1 if i < extra else 0)
        ranges.append((start, stop))
        start = stop
    return ranges


@dataclass
class PlannedWorkload:
    model: ResolvedImage
    env: ResolvedImage
    task_id: str
    benchmark: str
    scenario: str
    perturbation: str
    episodes: int
    seed: int
    record: str
    workers: int
    max_steps: int | None
    env_vars: dict
    env_kwargs: dict
    success_criterion: dict | None
    metadata: dict
    shards: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Plan:
    data: dict
    name: str
    tags: dict
    metadata: dict
    timeout_seconds: float | None
    workloads: list[PlannedWorkload]
    warnings: list[str]
    config: dict

    @property
    def total_episodes(self) -> int:
        return sum(w.episodes for w in self.workloads)

    def estimates(self) -> dict:
        """Sizes and a rough duration, from the configured sustained steps/s per shard (see bench/)."""
        shards = sum(len(w.shards) for w in self.workloads)
        steps = sum(w.episodes * (w.max_steps or _env_step_limit(w)) for w in self.workloads)
        # Recorded episodes render every step: budget settings.RLMESH_ESTIMATED_RENDER_SECONDS per frame
        # (MuJoCo on CPU: 75–300 ms at 128², spec/ENVS.md §2; CartPole ~9 ms).
        rendered = sum(_recorded_episodes(w) * (w.max_steps or _env_step_limit(w)) for w in self.workloads)
        parallel = max(1, min(shards, settings.RLMESH_ESTIMATED_PARALLEL_SHARDS))
        seconds = steps / settings.RLMESH_ESTIMATED_STEPS_PER_SECOND + rendered * settings.RLMESH_ESTIMATED_RENDER_SECONDS
        return {
            "episodes": self.total_episodes,
            "workloads": len(self.workloads),
            "shards": shards,
            "maxEnvSteps": steps,
            "maxRenderedFrames": rendered,
            "estimatedSecondsUpperBound": round(seconds / parallel, 1),
        }

    def workload_summaries(self) -> list[dict]:
        return [
            {
                "model": w.model.reference,
                "env": w.env.reference,
                "taskId": w.task_id,
                "episodes": w.episodes,
                "workers": w.workers,
                "shards": len(w.shards),
                "seeds": [w.seed, w.seed + w.episodes - 1],
            }
            for w in self.workloads
        ]


def _env_step_limit(w: PlannedWorkload) -> int:
    # Gymnasium's own time limits for the classic scenarios, Meta-World's 500; an unknown env counts 1,000.
    if "task" in w.env_kwargs and "benchmark" in w.env_kwargs:
        return 500
    return {"CartPole-v1": 500, "MountainCar-v0": 200, "Acrobot-v1": 500, "Pendulum-v1": 200}.get(
        w.env_kwargs.get("env_id", ""), 1000
    )


def _recorded_episodes(w: PlannedWorkload) -> int:
    """Upper bound of the episodes of a workload that render frames (``failures`` renders them all)."""
    if w.record in ("all", "failures"):
        return w.episodes
    if w.record.startswith("first:"):
        return min(w.episodes, int(w.record.split(":", 1)[1]))
    return 0


_RECORD = re.compile(r"^first:([1-9][0-9]{0,5})$")


def parse_record(value: str | None) -> str:
    """Normalize a task's ``record``: None/""/"none" → "none"; "all", "failures", "first:N" (N ≥ 1) kept.
    Raises ValueError naming the accepted forms."""
    if value in (None, "", "none"):
        return "none"
    if value in ("all", "failures") or _RECORD.match(value):
        return value
    raise ValueError(f'"{value}" is not a recording mode; use "all", "failures", "first:N" or "none"')


def _param_specs(env: ResolvedImage) -> dict[str, dict]:
    """The env's declared make parameters by name (``rlmesh.ParamSpec`` as recorded in its describe envelope);
    empty when none was recorded."""
    spec = ((env.version.describe or {}).get("params") or {}).get("param_spec") or {}
    return {p["name"]: p for p in spec.get("params") or [] if isinstance(p, dict) and isinstance(p.get("name"), str)}


def _make_params(env: ResolvedImage) -> set[str]:
    return set(_param_specs(env))


_PARAM_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,)}


def _check_params(params: dict, env: ResolvedImage, scenario: dict | None, path: str) -> list[dict]:
    """Errors for a task's ``params``: names the env does not declare, names its scenario fixes, ``physics``
    (a perturbation), values of the wrong JSON type or outside the declared choices."""
    errors: list[dict] = []
    declared = _param_specs(env)
    fixed = set((scenario or {}).get("params") or {})
    for name, value in params.items():
        where = f"{path}.{name}"
        if not declared:
            errors.append({"path": where, "message": f"{env.reference} declares no make parameters"})
        elif name == "physics":
            errors.append({"path": where, "message": 'set physics randomization with "perturbation": "physics:<s>"'})
        elif name not in declared:
            errors.append({"path": where, "message": f'unknown parameter "{name}" for {env.reference} (declared: {", ".join(sorted(set(declared) - fixed - {"physics"}))})'})
        elif name in fixed:
            errors.append({"path": where, "message": f'"{name}" is set by the scenario; choose another taskId instead'})
        else:
            spec = declared[name]
            types = _PARAM_TYPES.get(spec.get("type"), ())
            if types and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
                errors.append({"path": where, "message": f"must be a {spec.get('type')}"})
            elif spec.get("choices") and value not in spec["choices"]:
                errors.append({"path": where, "message": f"must be one of {', '.join(map(str, spec['choices']))}"})
    return errors


def _env_kwargs(scenario: dict | None, perturbation: str, params: dict | None = None) -> dict:
    kwargs = {**(params or {}), **(dict(scenario["params"]) if scenario else {})}
    p = perturbations.parse(perturbation)
    if p.side == "env" and p.strength:
        kwargs[p.name] = p.strength
    return kwargs


def _reference_errors(normalized: dict, organization: Organization, data: dict, reported: set[str]) -> list[dict]:
    """Best-effort reference errors for a request that already failed the schema, so one response lists every
    bad field: unknown models/envs whose own field was well-formed (paths not yet ``reported``)."""
    errors: list[dict] = []
    prefix = "models" if "models" in data else "model"
    entries = normalized.get("models") if prefix == "models" else [normalized.get("model")]
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        path = f"models[{i}].model" if prefix == "models" else "model.model"
        ref = entry.get("model") if isinstance(entry, dict) else None
        if isinstance(ref, str) and path not in reported:
            try:
                resolve_reference(ref, kind=ImageKind.MODEL, organization=organization)
            except ReferenceError_ as exc:
                errors.append({"path": path, "message": str(exc)})
    tasks = normalized.get("tasks")
    for i, task in enumerate(tasks if isinstance(tasks, list) else []):
        path = f"tasks[{i}].env"
        if isinstance(task, dict) and isinstance(task.get("env"), str) and path not in reported:
            try:
                resolve_reference(task["env"], kind=ImageKind.ENV, organization=organization)
            except ReferenceError_ as exc:
                errors.append({"path": path, "message": str(exc)})
    return errors


def plan_evaluation(data: dict, *, organization: Organization) -> Plan:
    """Validate ``data`` (a parsed request object) and expand it into a :class:`Plan`. Writes nothing.

    Raises RequestInvalid listing every problem found, each with its JSON path.
    """
    warnings = unknown_field_warnings(data)
    normalized = dict(data)
    if isinstance(normalized.get("models"), list):
        normalized["models"] = [{"model": m} if isinstance(m, str) else m for m in normalized["models"]]
    if isinstance(normalized.get("model"), str):
        normalized["model"] = {"model": normalized["model"]}
    serializer = EvaluationRequestSerializer(data=normalized)
    if not serializer.is_valid():
        errors = flatten_errors(serializer.errors)
        raise RequestInvalid(errors + _reference_errors(normalized, organization, data, {e["path"] for e in errors}))
    req = serializer.validated_data
    model_path = "models" if "models" in data else "model"

    errors: list[dict] = []
    models: list[ResolvedImage | None] = []
    for i, entry in enumerate(req["models"]):
        path = f"models[{i}].model" if model_path == "models" else "model.model"
        try:
            models.append(resolve_reference(entry["model"], kind=ImageKind.MODEL, organization=organization))
        except ReferenceError_ as exc:
            errors.append({"path": path, "message": str(exc)})
            models.append(None)
    for i, (entry, model) in enumerate(zip(req["models"], models)):
        if model is not None and entry.get("envVars") and not model.version.source.startswith("oci://"):
            # Trusted sources run as processes of the worker itself: variables such as PYTHONWARNINGS or
            # LD_PRELOAD would run code there. Only containers (the user's own images) receive envVars.
            warnings.append(f"models[{i}].envVars: {model.reference} runs on the worker host, not in a container; "
                            "its envVars are ignored (they reach only your own images)")
    seen = [e["model"] for e in req["models"]]
    for ref in sorted({r for r in seen if seen.count(r) > 1}):
        warnings.append(f'model "{ref}" is listed more than once; its scores are merged')

    total = 0
    tasks: list[tuple[dict, ResolvedImage, dict | None]] = []
    for i, task in enumerate(req["tasks"]):
        before = len(errors)
        if task["episodes"] > settings.RLMESH_MAX_EPISODES_PER_TASK:
            errors.append(
                {"path": f"tasks[{i}].episodes", "message": f"at most {settings.RLMESH_MAX_EPISODES_PER_TASK} episodes per task"}
            )
        if task["workers"] > settings.RLMESH_MAX_WORKERS_PER_TASK:
            errors.append(
                {"path": f"tasks[{i}].workers", "message": f"at most {settings.RLMESH_MAX_WORKERS_PER_TASK} workers per task"}
            )
        if task["workers"] > task["episodes"]:
            warnings.append(f"tasks[{i}].workers: {task['workers']} workers for {task['episodes']} episodes; using {task['episodes']}")
        try:
            perturbation = perturbations.parse(task.get("perturbation"))
        except perturbations.PerturbationError as exc:
            errors.append({"path": f"tasks[{i}].perturbation", "message": str(exc)})
            perturbation = perturbations.Perturbation()
        try:
            record = parse_record(task.get("record"))
        except ValueError as exc:
            errors.append({"path": f"tasks[{i}].record", "message": str(exc)})
            record = "none"
        total += task["episodes"]
        try:
            env = resolve_reference(task["env"], kind=ImageKind.ENV, organization=organization)
        except ReferenceError_ as exc:
            errors.append({"path": f"tasks[{i}].env", "message": str(exc)})
            continue
        scenario = None
        if env.version.scenarios:
            scenario = env.version.scenario(task["taskId"])
            if scenario is None:
                known = ", ".join(s["id"] for s in env.version.scenarios[:20])
                errors.append(
                    {"path": f"tasks[{i}].taskId", "message": f'unknown scenario "{task["taskId"]}" for {env.reference} (known: {known})'}
                )
                continue
        errors.extend(_check_params(task.get("params") or {}, env, scenario, f"tasks[{i}].params"))
        horizon = ((scenario or {}).get("success") or {}).get("steps")
        if horizon and task.get("maxSteps") and task["maxSteps"] < horizon:
            warnings.append(f"tasks[{i}].maxSteps: {task['maxSteps']} is below the {horizon} steps {task['taskId']} must "
                            "survive to succeed; every episode will count as a failure")
        if perturbation.side == "env" and "physics" not in _make_params(env):
            errors.append({
                "path": f"tasks[{i}].perturbation",
                "message": f"{perturbation.label} needs an env with a `physics` make parameter; {env.reference} has none "
                "(driver-side perturbations work everywhere: obs_noise, action_noise, action_repeat, action_delay)",
            })
        if len(errors) == before:
            tasks.append(({**task, "perturbation": perturbation.label, "record": record}, env, scenario))
    total *= max(1, len(req["models"]))
    if len(req["models"]) * len(req["tasks"]) > settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION:
        errors.append({
            "path": "tasks",
            "message": f"{len(req['models'])} models × {len(req['tasks'])} tasks = {len(req['models']) * len(req['tasks'])} workloads; "
            f"at most {settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION} per evaluation",
        })
    if total > settings.RLMESH_MAX_EPISODES_PER_EVALUATION:
        errors.append(
            {"path": "tasks", "message": f"{total} episodes in total; at most {settings.RLMESH_MAX_EPISODES_PER_EVALUATION} per evaluation"}
        )
    # Compatibility before any rollout: a checkpoint that declares its scenarios runs only there.
    for i, model in enumerate(models):
        if model is None or model.scenarios is None:
            continue
        for j, (task, env, _) in enumerate(tasks):
            if task["taskId"] not in model.scenarios:
                path = f"models[{i}].model" if model_path == "models" else "model.model"
                errors.append({
                    "path": path,
                    "message": f'{model.reference} is incompatible with tasks[{j}] ({env.reference} {task["taskId"]}): '
                    f'it was trained for {", ".join(model.scenarios)}',
                })
    # ... a model that acts only in some envs (labelled) runs only there ...
    for i, model in enumerate(models):
        allowed = (model.version.labels or {}).get(ENVS_LABEL) if model is not None else None
        if not allowed:
            continue
        for j, (task, env, _) in enumerate(tasks):
            if env.version.repository.path not in allowed.split(","):
                errors.append({
                    "path": f"models[{i}].model" if model_path == "models" else "model.model",
                    "message": f"{model.reference} acts only in {allowed.replace(',', ', ')}; tasks[{j}].env is {env.reference}",
                })
    # ... and a model with a model_spec must resolve an adapter against each env's recorded tags and spaces.
    resolved: dict[tuple[int, int], str | None] = {}
    for i, model in enumerate(models):
        if model is None or not (model.version.describe or {}).get("model_spec"):
            continue
        for j, (task, env, _) in enumerate(tasks):
            key = (model.version.pk, env.version.pk)
            if key not in resolved:
                resolved[key] = adapter_problem(model.version.describe, env.version.describe)
            if resolved[key]:
                path = f"models[{i}].model" if model_path == "models" else "model.model"
                errors.append({
                    "path": path,
                    "message": f"{model.reference} cannot be adapted to tasks[{j}].env ({env.reference} "
                    f"{task['taskId']}): {resolved[key]}",
                })
    if errors:
        raise RequestInvalid(errors)

    workloads: list[PlannedWorkload] = []
    for model, entry in zip(models, req["models"]):
        for task, env, scenario in tasks:
            benchmark, scen = (task["taskId"].split("/", 1) if "/" in task["taskId"] else ("", task["taskId"]))
            workers = min(task["workers"], task["episodes"])
            workloads.append(
                PlannedWorkload(
                    model=model,
                    env=env,
                    task_id=task["taskId"],
                    benchmark=benchmark,
                    scenario=scen,
                    perturbation=task["perturbation"],
                    episodes=task["episodes"],
                    seed=task["seed"],
                    record=task["record"],
                    workers=workers,
                    max_steps=task["maxSteps"],
                    env_vars=entry.get("envVars", {}) if model.version.source.startswith("oci://") else {},
                    env_kwargs=_env_kwargs(scenario, task["perturbation"], task.get("params")),
                    success_criterion=scenario.get("success") if scenario else None,
                    metadata=task.get("metadata", {}),
                    shards=shard_ranges(task["episodes"], workers, settings.RLMESH_MAX_EPISODES_PER_SHARD),
                )
            )

    timeout = req.get("timeoutSeconds")
    config = {
        "models": [
            {
                "model": m.reference,
                "repository": m.version.repository.path,
                "checkpoint": m.checkpoint,
                "digest": m.version.digest,
                "source": m.version.source,
                "envVars": e.get("envVars", {}),
            }
            for m, e in zip(models, req["models"])
        ],
        "tasks": [
            {
                "env": env.reference,
                "repository": env.version.repository.path,
                "digest": env.version.digest,
                "source": env.version.source,
                "taskId": task["taskId"],
                "makeKwargs": _env_kwargs(scenario, task["perturbation"], task.get("params")),
                "successCriterion": scenario.get("success") if scenario else None,
                "episodes": task["episodes"],
                "seed": task["seed"],
                "seeds": list(range(task["seed"], task["seed"] + task["episodes"])),
                "workers": min(task["workers"], task["episodes"]),
                "maxSteps": task["maxSteps"],
                "perturbation": task["perturbation"],
                "record": task["record"],
            }
            for task, env, scenario in tasks
        ],
        "timeoutSeconds": timeout,
        "episodeTimeoutSeconds": min(settings.RLMESH_EPISODE_TIMEOUT, timeout or math.inf),
        "requestTimeoutSeconds": settings.RLMESH_REQUEST_TIMEOUT,
        "runtime": {"rlmesh": "0.1.0", "workflowEdition": settings.RLMESH_WORKFLOW_EDITION},
    }
    return Plan(
        data=data,
        name=req.get("name", ""),
        tags=req.get("tags", {}),
        metadata=req.get("metadata", {}),
        timeout_seconds=timeout,
        workloads=workloads,
        warnings=warnings,
        config=config,
    )
