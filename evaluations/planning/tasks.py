"""Step 3 of planning: check each task against the server's caps and its environment (the scenario it names, its
``params``, perturbation and recording mode) and turn it into a :class:`~evaluations.planning.plan.PlannedTask`."""

from __future__ import annotations

import json
import re

from django.conf import settings

from ..choices import ImageKind
from ..domain import perturbations
from ..domain.outcomes import SUCCESS_LABEL, criterion_problems
from ..models import Organization
from ..prebuilt.catalog import declared_bounds
from ..services.image_versions import ReferenceError_, ResolvedImage, resolve_reference
from .horizons import env_horizon, step_cap_warnings
from .limits import evaluation_caps
from .plan import PlannedTask
from .rendering import concurrency_cap, memory_cap_warning

__all__ = ["check_tasks", "find_scenario", "overlap_warnings", "parse_record", "success_criterion"]

_RECORD = re.compile(r"^first:([1-9][0-9]{0,5})$")
_PARAM_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,)}


def parse_record(value: str | None) -> str:
    """Normalize a task's ``record``: None/""/"none" → "none"; "all", "failures", "first:N" (N ≥ 1) kept.
    Raises ValueError naming the accepted forms."""
    if value in (None, "", "none"):
        return "none"
    if value in ("all", "failures") or _RECORD.match(value):
        return value
    if isinstance(value, str) and re.fullmatch(r"first:[0-9]+", value):
        raise ValueError(f'"{value}": N in "first:N" must be a whole number from 1 to 999999')
    raise ValueError(f'"{value}" is not a recording mode; use "all", "failures", "first:N" or "none"')


def param_specs(env: ResolvedImage) -> dict[str, dict]:
    """The env's declared make parameters by name (``rlmesh.ParamSpec`` as recorded in its describe envelope);
    empty when none was recorded."""
    spec = ((env.version.describe or {}).get("params") or {}).get("param_spec") or {}
    return {p["name"]: p for p in spec.get("params") or [] if isinstance(p, dict) and isinstance(p.get("name"), str)}


def _param_problem(name: str, value, env: ResolvedImage, declared: dict, fixed: set) -> str | None:
    if not declared:
        return f"{env.reference} declares no make parameters"
    if name == "physics":
        return 'set physics randomization with "perturbation": "physics:<s>"'
    if name == "perturbation":
        return 'choose a perturbed task set with the task\'s "perturbation" (e.g. "swap", "position_x:0.1")'
    if name not in declared:
        settable = ", ".join(sorted(set(declared) - fixed - {"physics", "perturbation"}))
        return (f'unknown parameter "{name}" for {env.reference} '
                f'({"declared: " + settable if settable else "it declares no parameter a task may set"})')
    if name in fixed:
        return f'"{name}" is set by the scenario; choose another taskId instead'
    spec = declared[name]
    types = _PARAM_TYPES.get(spec.get("type"), ())
    if types and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
        return f"must be a {spec.get('type')}"
    if spec.get("choices") and value not in spec["choices"]:
        return f"must be one of {', '.join(map(str, spec['choices']))}"
    low, high = declared_bounds(env.version).get(name, (None, None))
    if low is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and not low <= value <= high:
        return (f"must be from {low} to {high} ({env.reference}'s range for {name}: a larger value costs the "
                "worker's memory on every step)")
    return None


def check_params(params: dict, env: ResolvedImage, scenario: dict | None, path: str) -> list[dict]:
    """Errors for a task's ``params``: names the env does not declare, names its scenario fixes, ``physics``
    (a perturbation), values of the wrong JSON type or outside the declared choices, and the parameters the
    scenario ``requires`` (e.g. the shop's open task needs a ``task_definition``) left out or blank."""
    declared = param_specs(env)
    fixed = set((scenario or {}).get("params") or {})
    errors = []
    for name, value in params.items():
        problem = _param_problem(name, value, env, declared, fixed)
        if problem:
            errors.append({"path": f"{path}.{name}", "message": problem})
    for name in (scenario or {}).get("requires") or []:
        value = params.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            errors.append({"path": f"{path}.{name}", "message": f"scenario {scenario['id']} needs this parameter"})
    return errors


def env_kwargs(scenario: dict | None, perturbation: perturbations.Perturbation, params: dict | None = None) -> dict:
    """The env's make kwargs: the task's ``params``, overridden by the scenario's own, plus an env-side perturbation."""
    kwargs = {**(params or {}), **(dict(scenario["params"]) if scenario else {})}
    if perturbation.side == "env" and perturbation.strength:
        kind = perturbations.CATALOG[perturbation.name]
        kwargs[kind.param] = kind.make_value(perturbation.strength)
    return kwargs


def _caps(task: dict, path: str, errors: list[dict], warnings: list[str]) -> None:
    if task["episodes"] > settings.RLMESH_MAX_EPISODES_PER_TASK:
        errors.append({"path": f"{path}.episodes", "message": f"at most {settings.RLMESH_MAX_EPISODES_PER_TASK} episodes per task"})
    if task["workers"] > settings.RLMESH_MAX_WORKERS_PER_TASK:
        errors.append({"path": f"{path}.workers", "message": f"at most {settings.RLMESH_MAX_WORKERS_PER_TASK} workers per task"})
    if task["workers"] > task["episodes"]:
        warnings.append(f"{path}.workers: {task['workers']} workers for {task['episodes']} episodes; using {task['episodes']}")


_INDEX = re.compile(r"^(?P<benchmark>[^/]+)/(?P<index>0|[1-9][0-9]{0,5})$")


def find_scenario(env: ResolvedImage, task_id: str) -> tuple[dict | None, str | None]:
    """``(scenario, problem)`` for a task id on an env with a catalog: the entry with this id, else — for
    ``<benchmark>/<index>`` — the entry at that position among the benchmark's scenarios in catalog order (what
    ``rlmesh.platform.scenario_tasks(..., tasks=[0])`` builds); ``(None, why)`` when neither exists."""
    scenario = env.version.scenario(task_id)
    if scenario is not None:
        return scenario, None
    m = _INDEX.match(task_id)
    if m:
        benchmark = [s for s in env.version.scenarios if s["id"].split("/", 1)[0] == m["benchmark"]]
        if int(m["index"]) < len(benchmark):
            return benchmark[int(m["index"])], None
    return None, _unknown_scenario(env, task_id)


def _unknown_scenario(env: ResolvedImage, task_id: str) -> str:
    """Why ``task_id`` names no scenario of ``env``, with what would: the benchmarks (with their sizes) when the
    catalog has them, the index range of the benchmark it names, the id it spells in other case."""
    ids = [s["id"] for s in env.version.scenarios]
    head = f'unknown scenario "{task_id}" for {env.reference}'
    folded = {i.casefold(): i for i in ids}
    if task_id.strip().casefold() in folded:
        return f'{head}: scenario ids are case-sensitive; did you mean "{folded[task_id.strip().casefold()]}"?'
    sizes: dict[str, int] = {}
    for i in ids:
        if "/" in i:
            sizes[i.split("/", 1)[0]] = sizes.get(i.split("/", 1)[0], 0) + 1
    if not sizes:
        return f"{head} (known: {', '.join(ids[:20])}{', …' if len(ids) > 20 else ''})"
    benchmark, _, rest = task_id.partition("/")
    if benchmark not in sizes:
        near = {b.casefold(): b for b in sizes}.get(benchmark.casefold())
        hint = f'; did you mean "{near}/{rest}"?' if near else ""
        listed = ", ".join(f"{b} ({n})" for b, n in sizes.items())
        return f'{head}: it has no benchmark "{benchmark}" (benchmarks: {listed}){hint}'
    n = sizes[benchmark]
    digits = rest.isascii() and rest.isdigit()
    why = (" (write the index without leading zeros)" if digits and len(rest) > 1 and rest.startswith("0") else
           f" ({rest} is past the last)" if digits else " (indexes count from 0)" if rest.startswith("-") else "")
    named = [i for i in ids if i.startswith(benchmark + "/") and not i.split("/", 1)[1].isdigit()]
    by_id = f"; or a scenario id: {', '.join(named[:8])}{', …' if len(named) > 8 else ''}" if named else ""
    return f"{head}: {benchmark} has {n} scenarios, indexes 0–{n - 1}{why}{by_id}"


def _scenario(task: dict, env: ResolvedImage, path: str, errors: list[dict], warnings: list[str]) -> tuple[bool, dict | None]:
    """``(ok, scenario)``: the catalog entry the task id names (None for an env without a catalog)."""
    if not env.version.scenarios:
        return True, None
    scenario, problem = find_scenario(env, task["taskId"])
    if problem:
        errors.append({"path": f"{path}.taskId", "message": problem})
        return False, None
    if scenario["id"] != task["taskId"]:
        warnings.append(f'{path}.taskId: "{task["taskId"]}" is scenario {scenario["id"]} of {env.reference} (recorded by name)')
    return True, scenario


def success_criterion(task: dict, env: ResolvedImage, scenario: dict | None) -> dict | None:
    """What defines success for a task, with who declared it (``declaredBy``): the request's ``successCriterion``, else
    the criterion the env declares for the scenario (its describe envelope's variant metadata or its
    ``dev.rlmesh.platform.success`` label, as the probe recorded them; the prebuilt catalog's for prebuilt envs), else
    the label's ``"*"`` default; None when nothing does (success is then undefined unless the env reports a flag)."""
    if task.get("successCriterion"):
        return {**task["successCriterion"], "declaredBy": "request"}
    declared = (scenario or {}).get("success") or env_default_criterion(env.version.labels or {})
    return {**declared, "declaredBy": "env"} if declared else None


def env_default_criterion(labels: dict) -> dict | None:
    """The ``"*"`` entry of an image's ``dev.rlmesh.platform.success`` label: the criterion of every task on it."""
    raw = labels.get(SUCCESS_LABEL)
    try:
        value = json.loads(raw).get("*") if isinstance(raw, str) else None
    except (ValueError, AttributeError):
        return None
    return value if value is not None and not criterion_problems(value) else None


def _success_warnings(task: dict, criterion: dict | None, env: ResolvedImage, path: str, warnings: list[str]) -> None:
    if criterion is None:
        warnings.append(
            f'{path}: nothing defines success for {env.reference} {task["taskId"]} (no criterion in the env\'s catalog '
            'or labels, no "successCriterion" in the task): unless the env reports info["success"] or '
            'info["is_success"], episodes have no success verdict and the success rate is null ("success '
            'undefined"); returns are still scored')
        return


def _resolve_env(ref: str, organization: Organization, memo: dict) -> ResolvedImage:
    """``resolve_reference`` for an env, once per reference in one request (its tasks mostly name one env: two queries
    per task were most of a large preview's time); a ReferenceError_ is remembered and raised again."""
    if ref not in memo:
        try:
            memo[ref] = resolve_reference(ref, kind=ImageKind.ENV, organization=organization)
        except ReferenceError_ as exc:
            memo[ref] = exc
    if isinstance(memo[ref], ReferenceError_):
        raise memo[ref]
    return memo[ref]


def _env_perturbation_problem(perturbation: perturbations.Perturbation, env: ResolvedImage,
                              scenario: dict | None) -> str | None:
    """Why an env-side perturbation cannot apply: the env lacks its make parameter, or the scenario lists the
    env-side perturbations it supports (``perturbations``) and this is not one of them."""
    if perturbation.side != "env":
        return None
    param = perturbations.CATALOG[perturbation.name].param
    if param not in param_specs(env):
        return (f"{perturbation.label} needs an env with a `{param}` make parameter; {env.reference} has none "
                "(driver-side perturbations work everywhere: obs_noise, action_noise, action_repeat, action_delay)")
    supported = (scenario or {}).get("perturbations")
    if supported is not None and perturbation.label not in supported:
        benchmark = scenario["id"].split("/", 1)[0]
        if not supported:
            return (f"{env.reference} {scenario['id']} does not ship {perturbation.label}: {benchmark} supports no "
                    "env-side perturbation (driver-side ones work everywhere: obs_noise, action_noise, action_repeat, "
                    "action_delay)")
        return (f"{env.reference} {scenario['id']} does not ship {perturbation.label}: {benchmark} supports "
                f"{', '.join(supported)}")
    return None


def _check_task(i: int, task: dict, organization: Organization, errors: list[dict], warnings: list[str],
                envs: dict) -> PlannedTask | None:
    path = f"tasks[{i}]"
    before = len(errors)
    _caps(task, path, errors, warnings)
    try:
        perturbation = perturbations.parse(task.get("perturbation"))
    except perturbations.PerturbationError as exc:
        errors.append({"path": f"{path}.perturbation", "message": str(exc)})
        perturbation = perturbations.Perturbation()
    try:
        record = parse_record(task.get("record"))
    except ValueError as exc:
        errors.append({"path": f"{path}.record", "message": str(exc)})
        record = "none"
    try:
        record_steps = parse_record(task.get("recordSteps"))
    except ValueError as exc:
        errors.append({"path": f"{path}.recordSteps", "message": str(exc)})
        record_steps = "none"
    try:
        env = _resolve_env(task["env"], organization, envs)
    except ReferenceError_ as exc:
        errors.append({"path": f"{path}.env", "message": str(exc)})
        return None
    ok, scenario = _scenario(task, env, path, errors, warnings)
    if not ok:
        return None
    errors.extend(check_params(task.get("params") or {}, env, scenario, f"{path}.params"))
    criterion = success_criterion(task, env, scenario)
    _success_warnings(task, criterion, env, path, warnings)
    kwargs = env_kwargs(scenario, perturbation, task.get("params"))
    warnings.extend(step_cap_warnings(task, criterion, scenario, kwargs, path))
    own_cap = env_horizon(scenario, kwargs)
    if own_cap and task.get("maxSteps") and task["maxSteps"] > own_cap:
        warnings.append(f"{path}.maxSteps: {task['maxSteps']} is above the {own_cap} steps {task['taskId']} ends its "
                        f"episodes at (the env's own limit); episodes are truncated at {own_cap}")
    problem = _env_perturbation_problem(perturbation, env, scenario)
    if problem:
        errors.append({"path": f"{path}.perturbation", "message": problem})
    if len(errors) > before:
        return None
    workers = min(task["workers"], task["episodes"])
    cap = concurrency_cap(env)
    if cap is not None and workers > cap:
        warnings.append(memory_cap_warning(path, env, workers, cap))
        workers = cap
    return PlannedTask(
        env=env, task_id=scenario["id"] if scenario else task["taskId"], requested_task_id=task["taskId"],
        scenario=scenario, success_criterion=criterion, perturbation=perturbation.label, record=record,
        record_steps=record_steps, episodes=task["episodes"], seed=task["seed"], workers=workers,
        max_steps=task["maxSteps"], env_kwargs=env_kwargs(scenario, perturbation, task.get("params")),
        metadata=task.get("metadata", {}), declared_params=tuple(param_specs(env)),
    )


def check_tasks(tasks: list[dict], *, models: int, organization: Organization, errors: list[dict],
                warnings: list[str]) -> list[PlannedTask]:
    """Check every task (schema-valid dicts) and the evaluation-wide caps for ``models`` models; append problems to
    ``errors``/``warnings``; return the tasks that passed their own checks."""
    envs: dict = {}
    checked = [(i, t) for i, task in enumerate(tasks) if (t := _check_task(i, task, organization, errors, warnings, envs))]
    warnings.extend(overlap_warnings(checked))
    errors += evaluation_caps(models, len(tasks), sum(t["episodes"] for t in tasks))
    return [t for _, t in checked]


def overlap_warnings(checked: list[tuple[int, PlannedTask]]) -> list[str]:
    """Warnings for tasks (``(request index, task)``) that repeat an earlier one: the same env version, scenario,
    make kwargs (``params``) and perturbation with overlapping seed ranges run the same episodes again for every
    model; scores pool them, so their interval counts the copies as independent evidence."""
    out, seen = [], []
    for i, t in checked:
        key = (t.env.version.pk, t.task_id, json.dumps(t.env_kwargs, sort_keys=True, default=str), t.perturbation)
        for j, other_key, first, last in seen:
            lo, hi = max(first, t.seed), min(last, t.seed + t.episodes - 1)
            if other_key == key and lo <= hi:
                out.append(f"tasks[{i}]: repeats tasks[{j}] ({t.task_id}, same env, params and perturbation) on seeds "
                           f"{lo}–{hi}: {'those ' + str(hi - lo + 1) + ' episodes run' if hi > lo else 'that episode runs'} again with the same seeds for every model, and "
                           "scores pool both entries, so the success rate's interval treats the copies as independent "
                           "episodes and is narrower than the data supports; use another seed range or more episodes")
                break
        seen.append((i, key, t.seed, t.seed + t.episodes - 1))
    return out
