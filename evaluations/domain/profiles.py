"""Performance profiles (the rliable plot): the fraction of scores above each threshold, with bootstrap bands.

Agarwal R, Schwarzer M, Castro PS, Courville A, Bellemare MG (2021), "Deep reinforcement learning at the edge
of the statistical precipice", NeurIPS: a performance profile plots, for each score threshold τ, the fraction
of (run, task) scores greater than τ, with a pointwise 95 % stratified-bootstrap band. Pure functions, plain
mappings in, JSON-safe dicts out. The bootstrap keeps ``evaluations.domain.scoring.iqm_interval``'s conventions:
resample within each task (stratified), ``reps`` replicates from ``numpy.random.default_rng(seed)`` drawn
task by task in mapping order, percentile interval from ``numpy.quantile``; the same seed gives the same band.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["performance_profile", "task_mean_profile"]


def _arrays(by_task: Mapping[str, Sequence[float]], thresholds: Sequence[float], reps: int, confidence: float):
    import numpy as np

    tasks = [np.asarray(v, dtype=float) for v in by_task.values()]
    if not tasks or any(t.size == 0 for t in tasks):
        raise ValueError("a performance profile needs at least one task and one score per task")
    taus = np.asarray(thresholds, dtype=float)
    if taus.ndim != 1 or taus.size == 0:
        raise ValueError("thresholds must be a non-empty sequence of numbers")
    if not all(np.isfinite(t).all() for t in tasks) or not np.isfinite(taus).all():
        raise ValueError("scores and thresholds must be finite")
    if reps < 1 or not 0 < confidence < 1:
        raise ValueError(f"reps must be ≥ 1 and confidence in (0, 1), got {reps} and {confidence}")
    return tasks, taus


def _result(taus, point, boot, *, tasks: int, reps: int, confidence: float, seed: int) -> dict:
    import numpy as np

    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha], axis=0)
    return {
        "thresholds": [float(t) for t in taus],
        "fraction": [float(f) for f in point],
        "low": [float(v) for v in low],
        "high": [float(v) for v in high],
        "tasks": tasks,
        "reps": reps,
        "confidence": confidence,
        "seed": seed,
    }


def performance_profile(
    scores_by_task_by_run: Mapping[str, Sequence[float]],
    thresholds: Sequence[float],
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict:
    """The rliable score distribution: for each threshold τ, the fraction of (run, task) scores > τ.

    ``scores_by_task_by_run`` maps each task to its scores, one per run (a run is an independent evaluation,
    e.g. a training seed or a repeated evaluation of the model). The fraction is the mean over tasks of the
    fraction of that task's runs above τ (every task weighs the same; with the same number of runs per task
    this is rliable's fraction over the run × task matrix). The band resamples runs with replacement within
    each task (rliable's ``StratifiedBootstrap``). With one run per task the band has zero width: use
    :func:`task_mean_profile` to bootstrap episodes instead. Returns ``{"thresholds", "fraction", "low",
    "high"}`` (lists aligned with ``thresholds``, fractions in [0, 1]) plus ``"tasks"``, ``"reps"``,
    ``"confidence"``, ``"seed"``. Raises ValueError if there is no task, a task has no score, thresholds are
    empty, a value is not finite, ``reps < 1`` or ``confidence`` is outside (0, 1).
    """
    import numpy as np

    tasks, taus = _arrays(scores_by_task_by_run, thresholds, reps, confidence)
    point = np.mean([(t[:, None] > taus).mean(axis=0) for t in tasks], axis=0)
    rng = np.random.default_rng(seed)
    boot = np.zeros((reps, taus.size))
    for t in tasks:
        sample = t[rng.integers(0, t.size, size=(reps, t.size))]  # reps × runs, resampled within this task
        for j, tau in enumerate(taus):
            boot[:, j] += (sample > tau).mean(axis=1)
    boot /= len(tasks)
    return _result(taus, point, boot, tasks=len(tasks), reps=reps, confidence=confidence, seed=seed)


def task_mean_profile(
    outcomes_by_task: Mapping[str, Sequence[float]],
    thresholds: Sequence[float],
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict:
    """For each threshold τ, the fraction of tasks whose mean outcome is > τ, for one evaluation of one model.

    ``outcomes_by_task`` maps each task to its episode outcomes (1.0/0.0 for success, so the task's score is
    its success rate; or returns). This is the profile of the benchmark rollup, where each task has one run
    and the uncertainty is in its episodes: the band resamples episodes within each task exactly as
    ``evaluations.domain.scoring.iqm_interval`` does (same draws for the same seed), recomputes the task means and
    counts those above τ. Returns and raises as :func:`performance_profile`.
    """
    import numpy as np

    tasks, taus = _arrays(outcomes_by_task, thresholds, reps, confidence)
    point = (np.array([t.mean() for t in tasks])[:, None] > taus).mean(axis=0)
    rng = np.random.default_rng(seed)
    # reps × tasks matrix of resampled task means, drawn as iqm_interval draws them.
    means = np.column_stack([t[rng.integers(0, t.size, size=(reps, t.size))].mean(axis=1) for t in tasks])
    boot = np.column_stack([(means > tau).mean(axis=1) for tau in taus])
    return _result(taus, point, boot, tasks=len(tasks), reps=reps, confidence=confidence, seed=seed)
