"""How an episode's end is named and judged: its stop condition and its success verdict.

One set of rules for every way an episode reaches the platform — the shard loop's ``rlmesh.run`` path, its explicit
session loop, and imported ``rlmesh.result.v1`` bundles — so the same outcome always gets the same record. Pure
functions of plain values; no ORM.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum

__all__ = ["CRITERION_KINDS", "STEP_BOUND", "STOP_LABELS", "SUCCESS_LABEL", "SUCCESS_SOURCE_LABELS", "StopCondition",
           "SuccessSource", "criterion_problems", "criterion_summary", "env_success_flag", "episode_success",
           "stop_condition"]


class StopCondition(StrEnum):
    """Why an episode ended (``Episode.stop_condition``; ``evaluations.choices`` makes its Django choices)."""

    TERMINATED = "terminated"
    TIME_LIMIT = "time_limit"
    MAX_STEPS = "max_steps"
    WALL_TIME = "wall_time"
    STEP_BOUND = "step_bound"
    ERROR = "error"


STOP_LABELS = {
    StopCondition.TERMINATED: "env reached a terminal state",
    StopCondition.TIME_LIMIT: "env's own time limit (truncated)",
    StopCondition.MAX_STEPS: "the task's maxSteps cap",
    StopCondition.WALL_TIME: "the episode wall-time cap",
    StopCondition.STEP_BOUND: "rlmesh's built-in 100,000-step bound",
    StopCondition.ERROR: "the episode failed",
}


class SuccessSource(StrEnum):
    """Where an episode's success verdict came from (``Episode.success_source``)."""

    ENV = "env"
    CRITERION = "criterion"
    #: Nothing defines success for the episode: no env flag, no criterion. Its return still counts.
    UNDEFINED = "undefined"
    #: Legacy: episodes recorded before success could be undefined fell back to ``terminated``.
    TERMINATED = "terminated"


SUCCESS_SOURCE_LABELS = {
    SuccessSource.ENV: "the env's own info flag (is_success / success)",
    SuccessSource.CRITERION: "a declared success criterion (the request's, else the env's for the scenario)",
    SuccessSource.UNDEFINED: "success undefined (no env flag, no criterion)",
    SuccessSource.TERMINATED: "terminated (legacy guess; no longer made)",
}

#: Image label declaring success criteria by scenario id (``"*"``: every task on the image), a JSON object of
#: criteria; the probe records them in the version's scenario catalog.
SUCCESS_LABEL = "dev.rlmesh.platform.success"
#: rlmesh's built-in bound on steps per episode when no cap is given (spec/ENVS.md §3).
STEP_BOUND = 100_000


def stop_condition(
    *, terminated: bool, truncated: bool, steps: int, max_steps: int | None = None, wall_s: float | None = None,
    wall_cap: float | None = None,
) -> str:
    """Why an episode ended, as a :class:`StopCondition` value.

    ``terminated`` wins (the env reached a terminal state). A truncation is attributed, in order, to the task's
    ``max_steps`` cap (``steps >= max_steps``), the episode wall-time cap (``wall_s >= wall_cap``, both in
    seconds), rlmesh's 100,000-step bound, and otherwise the env's own time limit. An episode that neither
    terminated nor truncated (cannot happen in rlmesh) is reported as ``time_limit``.
    """
    if terminated:
        return StopCondition.TERMINATED
    if truncated:
        if max_steps is not None and steps >= max_steps:
            return StopCondition.MAX_STEPS
        if wall_cap is not None and wall_s is not None and wall_s >= wall_cap:
            return StopCondition.WALL_TIME
        if steps >= STEP_BOUND:
            return StopCondition.STEP_BOUND
    return StopCondition.TIME_LIMIT


def env_success_flag(info) -> bool | None:
    """The env's own success flag from a step's ``info`` (``success``, else ``is_success``), or None when it has
    none (or ``info`` is not a mapping)."""
    if not isinstance(info, Mapping):
        return None
    flag = info.get("success", info.get("is_success"))
    return None if flag is None else bool(flag)


#: Criterion kinds a success criterion may name (``{"kind": …}``), with the fields each takes.
CRITERION_KINDS: dict[str, str] = {
    "survived": 'not terminated, stopped by the time limit or the maxSteps cap; with "steps": n, at least n steps long',
    "terminated": "the env reached a terminal state (e.g. MountainCar's flag)",
    "return_at_least": 'the episode return is at least "threshold"',
    "env_flag": 'the env\'s own info["success"] / info["is_success"] (no flag: success undefined)',
}
_CRITERION_FIELDS = {"kind", "steps", "threshold", "description"}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def criterion_problems(value) -> list[tuple[str, str]]:
    """What is wrong with a success criterion, as ``[(sub-path, message)]`` (empty when it is usable).

    Sub-paths are relative to the criterion (``""``, ``".kind"``, ``".steps"``…), so callers prefix the path where
    the criterion was written (``tasks[0].successCriterion``, a probe's scenario id, a bundle's workload)."""
    if not isinstance(value, Mapping):
        return [("", 'must be an object such as {"kind": "survived", "steps": 500}')]
    kind = value.get("kind")
    if kind not in CRITERION_KINDS:
        return [(".kind", f"must be one of {', '.join(CRITERION_KINDS)}, got {kind!r}")]
    problems = [(f".{k}", f'is not a field of a success criterion ({", ".join(sorted(_CRITERION_FIELDS))})')
                for k in value if k not in _CRITERION_FIELDS]
    if kind == "return_at_least" and value.get("threshold") is None:
        problems.append((".threshold", "is required for return_at_least: a finite number"))
    elif kind == "return_at_least" and not _is_number(value["threshold"]):
        given = value["threshold"]
        what = (f"a string ({given[:20]!r})" if isinstance(given, str) else "a boolean" if isinstance(given, bool)
                else f"{given!r}" if isinstance(given, float) else f"a JSON {type(given).__name__}")
        problems.append((".threshold", f"must be a finite number such as 200 (without quotes), got {what}"))
    if "threshold" in value and kind != "return_at_least":
        problems.append((".threshold", f"applies to return_at_least only, not {kind}"))
    steps = value.get("steps")
    if "steps" in value and (kind != "survived" or isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        problems.append((".steps", "must be a whole number ≥ 1" if kind == "survived" else f"applies to survived only, not {kind}"))
    if not isinstance(value.get("description", ""), str):
        problems.append((".description", "must be a string"))
    return problems


def criterion_summary(criterion: Mapping | None) -> str:
    """A short human phrase for a criterion: its ``description``, else one built from its fields."""
    if not criterion:
        return "undefined"
    if criterion.get("description"):
        return str(criterion["description"])
    kind = criterion.get("kind")
    if kind == "survived":
        return f"survived {criterion['steps']} steps" if criterion.get("steps") else "survived to the time limit"
    if kind == "return_at_least":
        return f"return ≥ {criterion.get('threshold'):g}"
    return {"terminated": "reached a terminal state", "env_flag": "the env's success flag"}.get(kind, str(kind))


def _judge(criterion: Mapping, *, terminated: bool, reward: float, stop_condition: str, steps: int | None) -> bool:
    kind = criterion.get("kind")
    if kind == "survived":
        long_enough = steps is None or criterion.get("steps") is None or steps >= int(criterion["steps"])
        survived = not terminated and stop_condition in (StopCondition.TIME_LIMIT, StopCondition.MAX_STEPS)
        return survived and long_enough
    if kind == "terminated":
        return bool(terminated)
    if kind == "return_at_least":
        return reward >= float(criterion["threshold"])
    raise ValueError(f"unknown success criterion kind {kind!r}")


def episode_success(
    *,
    env_flag: bool | None,
    criterion: Mapping | None,
    terminated: bool,
    reward: float,
    stop_condition: str,
    steps: int | None = None,
) -> tuple[bool | None, str]:
    """Decide an episode's success and say where the verdict came from.

    Order: a criterion the *request* declared (``criterion["declaredBy"] == "request"``) → the env's own flag
    (``info["is_success"]``/``info["success"]``, as rlmesh reports it) → a criterion the env declared for the
    scenario (its describe envelope, an image label or the prebuilt catalog) → **undefined**. ``terminated`` is never
    a guess: on CartPole it means the pole fell. Criteria (:data:`CRITERION_KINDS`):
    ``{"kind": "survived", "steps": n}`` (not terminated, stopped by the time limit or the maxSteps cap, and — when
    the criterion names ``steps`` and ``steps`` is given — at least n steps long, so a maxSteps cap below the horizon
    is not a success), ``{"kind": "terminated"}``, ``{"kind": "return_at_least", "threshold": x}`` and
    ``{"kind": "env_flag"}`` (only the env's flag decides).

    Returns ``(success, source)``: ``(bool, "criterion" | "env")``, or ``(None, "undefined")`` when nothing defines
    success. Raises ValueError on an unknown criterion kind.
    """
    usable = criterion if criterion and criterion.get("kind") != "env_flag" else None
    outcome = {"terminated": terminated, "reward": reward, "stop_condition": stop_condition, "steps": steps}
    if usable and usable.get("declaredBy") == "request":
        return _judge(usable, **outcome), SuccessSource.CRITERION
    if env_flag is not None:
        return bool(env_flag), SuccessSource.ENV
    if usable:
        return _judge(usable, **outcome), SuccessSource.CRITERION
    return None, SuccessSource.UNDEFINED
