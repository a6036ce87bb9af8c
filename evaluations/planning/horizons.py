"""How a task's ``maxSteps`` cap interacts with its environment's own episode horizon and its success criterion.

A cap below the env's horizon changes what every criterion kind measures: ``survived`` with ``steps`` can no longer
be met, ``survived`` without ``steps`` only asks to last the cap, ``terminated`` and ``env_flag`` lose the chances
after the cap, and a ``return_at_least`` threshold is judged on a partial return. These are warnings, not errors:
a short smoke run is legitimate, but its verdicts are not those of the full-length task.
"""

from __future__ import annotations

__all__ = ["env_horizon", "step_cap_warnings"]

#: Gymnasium's own time limits of the prebuilt scenarios whose catalog entries name none (``env_id`` make param).
_GYM_LIMITS = {"CartPole-v1": 500, "MountainCar-v0": 200, "Acrobot-v1": 500, "Pendulum-v1": 200,
               "LunarLander-v3": 1000, "HalfCheetah-v5": 1000, "Hopper-v5": 1000, "Walker2d-v5": 1000, "Ant-v5": 1000}


def env_horizon(scenario: dict | None, env_kwargs: dict) -> int | None:
    """Steps after which the env ends an episode by itself (its time limit), or None when unknown: the scenario's
    ``maxSteps``, else Meta-World's 500 (``benchmark`` + ``task`` kwargs), else Gymnasium's limit for ``env_id``."""
    if scenario and scenario.get("maxSteps"):
        return int(scenario["maxSteps"])
    if "task" in env_kwargs and "benchmark" in env_kwargs:
        return 500
    return _GYM_LIMITS.get(env_kwargs.get("env_id", ""))


def _return_warning(where: str, cap: int, horizon: int, criterion: dict, scenario: dict | None) -> str:
    threshold = float(criterion["threshold"])
    head = (f"{where}: {cap} is below the {horizon} steps the env runs an episode; the return threshold "
            f"{threshold:g} is judged on at most {cap} steps' return, so the verdict is not comparable with the "
            "full-length task")
    low, high = ((scenario or {}).get("rewardRange") or (None, None))
    if high is not None and high <= 0:
        if cap * float(low) >= threshold:
            return (f"{head}: its rewards are never positive (at least {float(low):g} a step), so {cap} steps "
                    f"cannot return less than {cap * float(low):g}; every episode will count as a success")
        return f"{head}: its rewards are never positive, so a shorter episode loses less and the threshold is easier"
    if low is not None and low >= 0:
        if cap * float(high) < threshold:
            return (f"{head}: its rewards are at most {float(high):g} a step, so {cap} steps cannot return "
                    f"{threshold:g}; every episode will count as a failure")
        return f"{head}: its rewards are never negative, so a shorter episode earns less and the threshold is harder"
    if threshold > 0:
        return f"{head}: a positive threshold has fewer steps to be earned in, so it is most likely harder"
    return head


def step_cap_warnings(task: dict, criterion: dict | None, scenario: dict | None, env_kwargs: dict,
                      path: str) -> list[str]:
    """Warnings (strings naming ``path``) for a task whose ``maxSteps`` cap, or whose ``survived`` criterion's
    ``steps``, changes its success verdict relative to the env's own horizon (see the module doc). Empty when the
    criterion is None, the cap is absent or not below the horizon, or the horizon is unknown (``survived`` steps
    below ``maxSteps`` still warn)."""
    if not criterion:
        return []
    kind, cap, horizon = criterion.get("kind"), task.get("maxSteps"), env_horizon(scenario, env_kwargs)
    task_id, where = task.get("taskId"), f"{path}.maxSteps"
    if kind == "survived" and criterion.get("steps"):
        need = int(criterion["steps"])
        if cap and cap < need:
            return [f"{where}: {cap} is below the {need} steps {task_id} must survive to succeed; every episode "
                    "will count as a failure"]
        if horizon and horizon < need:
            return [f"{path}.successCriterion.steps: {need} is above the {horizon} steps the env ends {task_id}'s "
                    "episodes at (its own time limit); no episode can last that long, so every episode will count "
                    "as a failure"]
        return []
    if not (cap and horizon and cap < horizon):
        return []
    if kind == "survived":
        return [f"{where}: {cap} is below the {horizon} steps the env runs an episode; surviving the cap counts as "
                f"success, so the criterion is easier than on the full-length task"]
    if kind in ("terminated", "env_flag"):
        what = "reach its terminal state" if kind == "terminated" else "report success"
        return [f"{where}: {cap} is below the {horizon} steps the env runs an episode; an episode that would "
                f"{what} after step {cap} counts as a failure, so the success rate is biased low against the "
                "full-length task"]
    if kind == "return_at_least":
        return [_return_warning(where, cap, horizon, criterion, scenario)]
    return []
