"""How an episode's end is named and judged: its stop condition and its success verdict.

One set of rules for every way an episode reaches the platform — the shard loop's ``rlmesh.run`` path, its explicit
session loop, and imported ``rlmesh.result.v1`` bundles — so the same outcome always gets the same record. Pure
functions of plain values; no ORM.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..choices import StopCondition, SuccessSource

__all__ = ["STEP_BOUND", "env_success_flag", "episode_success", "stop_condition"]

#: rlmesh's built-in bound on steps per episode when no cap is given (spec/ENVS.md §3).
STEP_BOUND = 100_000


def stop_condition(
    *, terminated: bool, truncated: bool, steps: int, max_steps: int | None = None, wall_s: float | None = None,
    wall_cap: float | None = None,
) -> str:
    """Why an episode ended, as a :class:`~evaluations.choices.StopCondition` value.

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


def episode_success(
    *,
    env_flag: bool | None,
    criterion: Mapping | None,
    terminated: bool,
    reward: float,
    stop_condition: str,
    steps: int | None = None,
) -> tuple[bool, str]:
    """Decide an episode's success and say where the verdict came from.

    Order: the env's own flag (``info["is_success"]``/``info["success"]``, as rlmesh reports it) →
    the scenario's declared ``criterion`` → ``terminated``. Criteria:
    ``{"kind": "survived", "steps": n}`` (not terminated, stopped by the time limit or the maxSteps cap, and
    — when the criterion names ``steps`` and ``steps`` is given — at least n steps long, so a maxSteps cap
    below the horizon is not a success),
    ``{"kind": "terminated"}``, ``{"kind": "return_at_least", "threshold": x}``.
    Returns ``(success, source)`` with source ``"env" | "criterion" | "terminated"``;
    raises ValueError on an unknown criterion kind.
    """
    if env_flag is not None:
        return bool(env_flag), SuccessSource.ENV
    if criterion:
        kind = criterion.get("kind")
        if kind == "survived":
            long_enough = steps is None or criterion.get("steps") is None or steps >= int(criterion["steps"])
            survived = not terminated and stop_condition in (StopCondition.TIME_LIMIT, StopCondition.MAX_STEPS)
            return survived and long_enough, SuccessSource.CRITERION
        if kind == "terminated":
            return bool(terminated), SuccessSource.CRITERION
        if kind == "return_at_least":
            return reward >= float(criterion["threshold"]), SuccessSource.CRITERION
        raise ValueError(f"unknown success criterion kind {kind!r}")
    return bool(terminated), SuccessSource.TERMINATED
