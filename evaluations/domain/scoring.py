"""Pure functions from episode outcomes to scores and timing rollups. No ORM, no Django imports.

Conventions: success rates are fractions in [0, 1]; rewards are undiscounted episode returns;
latencies are milliseconds. Errored episodes produce no outcome: they are counted in ``errors``
and excluded from ``episodes``, the success rate and the mean reward.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from scipy import stats

from .pass_k import camel_table, pass_k_table

__all__ = [
    "GROUP_FIELDS",
    "cell_of_rows",
    "group_cells",
    "group_scores",
    "histogram_add",
    "histogram_merge",
    "histogram_percentile",
    "iqm_interval",
    "mean_interval",
    "mean_interval_of_moments",
    "merge_cells",
    "percentile",
    "split_task_id",
    "summarize",
    "summarize_cell",
    "task_outcomes",
    "wilson_interval",
]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (Wilson 1927).

    Returns ``(low, high)`` in [0, 1] for ``successes`` out of ``n`` trials at the two-sided
    ``confidence`` level. Raises ValueError if ``n <= 0`` or ``successes`` is outside ``[0, n]``.
    """
    if n <= 0:
        raise ValueError("wilson_interval needs n > 0")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n], got {successes} of {n}")
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At the boundaries the interval ends exactly at 0 or 1; say so instead of 0.9999999999999999.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float | None, float | None]:
    """Sample mean with a two-sided Student-t confidence interval.

    Returns ``(mean, low, high)``; ``low``/``high`` are None when ``len(values) < 2`` (no variance
    estimate), and equal the mean when every value is the same. Raises ValueError on an empty sequence.
    """
    n = len(values)
    if n == 0:
        raise ValueError("mean_interval needs at least one value")
    mean = math.fsum(values) / n
    return mean_interval_of_moments(n, mean, math.fsum((v - mean) ** 2 for v in values), confidence)


def mean_interval_of_moments(n: int, mean: float, m2: float, confidence: float = 0.95) -> tuple[float, float | None,
                                                                                               float | None]:
    """:func:`mean_interval` from ``n`` values' mean and sum of squared deviations ``m2`` (what a database aggregate
    or :func:`merge_cells` gives). Returns ``(mean, low, high)``; ``low``/``high`` None when ``n < 2``. Raises
    ValueError if ``n < 1``."""
    if n < 1:
        raise ValueError("mean_interval needs at least one value")
    if n < 2:
        return mean, None, None
    var = max(m2, 0.0) / (n - 1)
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(var / n)
    return mean, mean - half, mean + half


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated ``q``-th percentile (0–100) of ``values``; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def iqm_interval(
    outcomes_by_task: Mapping[str, Sequence[float]], *, reps: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """Interquartile mean across tasks of the per-task mean outcome, with a stratified bootstrap interval.

    The rliable method (Agarwal et al. 2021): the IQM (``scipy.stats.trim_mean(x, 0.25)``) of per-task
    means is robust to a few outlier tasks; the interval resamples episodes *within each task*
    (stratified) ``reps`` times with a fixed ``seed`` and takes percentiles. Returns
    ``(iqm, low, high)``. Raises ValueError if there is no task or a task has no outcome.
    """
    import numpy as np

    tasks = [np.asarray(v, dtype=float) for v in outcomes_by_task.values()]
    if not tasks or any(t.size == 0 for t in tasks):
        raise ValueError("iqm_interval needs at least one outcome per task")
    point = float(stats.trim_mean([t.mean() for t in tasks], 0.25))
    rng = np.random.default_rng(seed)
    # reps × tasks matrix of resampled task means, then the IQM of each row.
    means = np.column_stack([t[rng.integers(0, t.size, size=(reps, t.size))].mean(axis=1) for t in tasks])
    boot = stats.trim_mean(means, 0.25, axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    return point, float(low), float(high)


# ------------------------------------------------------------------ grouping
def split_task_id(task_id: str) -> tuple[str | None, str]:
    """Split ``"<benchmark>/<scenario>"`` into its parts; a task id without ``/`` has no benchmark. A scenario that is
    a bare index (LIBERO's ``"libero_object/0"``) names a task only within its benchmark, so the scenario is then the
    whole task id: ``groupBy=scenario`` keeps ``libero_object/0`` and ``libero_spatial/0`` apart, while Meta-World's
    ``mt1/reach-v3`` and ``mt10/reach-v3`` are one scenario."""
    if "/" in task_id:
        benchmark, scenario = task_id.split("/", 1)
        return benchmark, task_id if scenario.isdigit() else scenario
    return None, task_id


#: The fields each ``groupBy`` value keys on. Every grouping is per model except ``model``.
GROUP_FIELDS: dict[str, tuple[str, ...]] = {
    # A task is a scenario under one perturbation: a sweep's levels stay apart.
    "task": ("model", "env", "taskId", "perturbation"),
    "scenario": ("model", "scenario"),
    "benchmark": ("model", "benchmark"),
    "perturbation": ("model", "perturbation"),
    "model": ("model",),
}


# ------------------------------------------------------------------ cells
# A cell is the sufficient statistics of a set of episodes: what scoring needs, without the episodes. The database
# computes one per workload and success source (reports.score_cells); cells of a group are merged here, so the
# scores of a million episodes are a few hundred rows. Keys: the grouping fields, plus
#   completed, errors        episode counts (errors: every episode that did not complete)
#   judged, successes        completed episodes with a verdict, and those that succeeded
#   rewardN, rewardMean, rewardM2   completed episodes with a reward, their mean and sum of squared deviations
#   steps                    sum of steps over completed episodes
#   sources                  {success source: completed episodes} (empty source left out)
_OUTCOME_KEYS = ("completed", "errors", "judged", "successes", "rewardN", "rewardMean", "rewardM2", "steps", "sources")


def cell_of_rows(rows: Sequence[Mapping]) -> dict:
    """The cell (outcome statistics, no grouping fields) of episode rows: ``status``, ``success`` (bool or None),
    ``reward`` (float or None), ``steps`` (int), optional ``successSource``. Exact: sums by ``math.fsum``."""
    finished = [r for r in rows if r["status"] == "completed"]
    judged = [r for r in finished if r["success"] is not None]
    rewards = [float(r["reward"]) for r in finished if r["reward"] is not None]
    mean = math.fsum(rewards) / len(rewards) if rewards else None
    sources: dict[str, int] = {}
    for r in finished:
        if r.get("successSource"):
            sources[r["successSource"]] = sources.get(r["successSource"], 0) + 1
    return {"completed": len(finished), "errors": len(rows) - len(finished), "judged": len(judged),
            "successes": sum(1 for r in judged if r["success"]), "rewardN": len(rewards), "rewardMean": mean,
            "rewardM2": math.fsum((v - mean) ** 2 for v in rewards) if rewards else 0.0,
            "steps": sum(r["steps"] for r in finished), "sources": sources}


def merge_cells(cells: Iterable[Mapping]) -> dict:
    """One cell for the union of disjoint cells: counts add, reward moments combine by Chan et al.'s parallel
    formula (1979; stable, no sum of squares). Returns the outcome keys only."""
    out = {"completed": 0, "errors": 0, "judged": 0, "successes": 0, "rewardN": 0, "rewardMean": None,
           "rewardM2": 0.0, "steps": 0, "sources": {}}
    for c in cells:
        for k in ("completed", "errors", "judged", "successes", "steps"):
            out[k] += c[k]
        for source, count in c["sources"].items():
            out["sources"][source] = out["sources"].get(source, 0) + count
        nb = c["rewardN"]
        if not nb:
            continue
        na = out["rewardN"]
        if not na:
            out["rewardN"], out["rewardMean"], out["rewardM2"] = nb, c["rewardMean"], c["rewardM2"]
            continue
        n = na + nb
        delta = c["rewardMean"] - out["rewardMean"]
        out["rewardMean"] += delta * nb / n
        out["rewardM2"] += c["rewardM2"] + delta * delta * na * nb / n
        out["rewardN"] = n
    return out


def summarize_cell(cell: Mapping, confidence: float = 0.95) -> dict:
    """Score one cell (see :func:`summarize` for the fields returned)."""
    n = cell["completed"]
    out: dict = {"episodes": n, "successes": 0, "successUndefined": n - cell["judged"], "successRate": None,
                 "successRateCi": None}
    out.update({"meanReward": None, "meanRewardCi": None, "meanSteps": None, "errors": cell["errors"]})
    out["successSources"] = dict(cell["sources"])
    if n == 0:
        return out
    if cell["rewardN"]:
        mean, rlow, rhigh = mean_interval_of_moments(cell["rewardN"], cell["rewardMean"], cell["rewardM2"], confidence)
        out.update(meanReward=mean, meanRewardCi=None if rlow is None else [rlow, rhigh])
    out["meanSteps"] = cell["steps"] / n
    if cell["judged"]:
        successes, judged = cell["successes"], cell["judged"]
        low, high = wilson_interval(successes, judged, confidence)
        out.update(successes=successes, successRate=successes / judged, successRateCi=[low, high])
    return out


def summarize(rows: Sequence[Mapping], confidence: float = 0.95) -> dict:
    """Score one group of episode rows.

    Each row has ``status`` (``"completed"`` or ``"error"``), ``success`` (bool, or None when the episode has no
    verdict), ``reward`` (float, or None for an agent rollout nobody judged), ``steps`` (int) and optionally
    ``successSource``. Returns ``episodes`` (completed ones), ``successes``, ``successUndefined`` (completed episodes
    without a verdict: nothing defines success for the task, or an agent's open run had no verifiers and no judge),
    ``successRate`` over the judged episodes and its Wilson ``successRateCi``, ``meanReward`` over the completed
    episodes that have a reward and its t-interval ``meanRewardCi``, ``meanSteps`` over completed episodes, ``errors``
    and ``successSources`` (verdict counts per source). A missing verdict is never scored as a failure. Rates and
    means are None (intervals None) when nothing is there to average: the success rate when no completed episode has
    a verdict ("success undefined"), while returns are still scored.
    """
    return summarize_cell(cell_of_rows(rows), confidence)


def task_outcomes(cells: Iterable[Mapping], task=lambda c: (c.get("env"), c.get("taskId"))) -> dict:
    """Per task (``task(cell)``, by default ``(env, taskId)``), its judged episodes' outcomes as 1.0/0.0 (successes
    first): the input of :func:`iqm_interval` and the performance profiles, which only need each task's counts."""
    counts: dict = defaultdict(lambda: [0, 0])
    for c in cells:
        if c["judged"]:
            key = task(c)
            counts[key][0] += c["successes"]
            counts[key][1] += c["judged"]
    return {k: [1.0] * s + [0.0] * (j - s) for k, (s, j) in counts.items()}


def group_cells(cells: Iterable[Mapping], group_by: str, confidence: float = 0.95) -> list[dict]:
    """Group cells by ``GROUP_FIELDS[group_by]`` and score each group (:func:`summarize_cell` of the merged cells).

    Cells carry the grouping fields (``model``, ``env``, ``taskId``, ``scenario``, ``benchmark``, ``perturbation``)
    besides their outcome statistics. Returns ``[{"key": {...}, **summary}]`` in order of first appearance; a rollup
    across tasks also has ``tasks`` and, with two or more tasks with verdicts, the IQM of per-task success rates
    (rliable) and its stratified bootstrap interval. A group whose every task (env · taskId · perturbation) has
    more than one judged episode also has ``passAtK`` (:func:`~evaluations.domain.pass_k.pass_k_table`, camelCase:
    pass@k and pass^k for every k up to the smallest n). Raises ValueError for an unknown ``group_by``.
    """
    try:
        fields = GROUP_FIELDS[group_by]
    except KeyError:
        raise ValueError(f"groupBy must be one of {', '.join(GROUP_FIELDS)}; got {group_by!r}") from None
    groups: dict[tuple, list[Mapping]] = defaultdict(list)
    for cell in cells:
        groups[tuple(cell.get(f) for f in fields)].append(cell)
    out = []
    for key, members in groups.items():
        group = {"key": dict(zip(fields, key)), **summarize_cell(merge_cells(members), confidence)}
        if "taskId" not in fields:
            # A rollup across tasks: also the IQM of per-task success rates (rliable), when ≥ 2 tasks.
            # Tasks whose success is undefined have no success outcome: they count as tasks, not in the IQM.
            group["tasks"] = len({(c.get("env"), c.get("taskId")) for c in members if c["completed"]})
            by_task = task_outcomes(members)
            if len(by_task) >= 2:
                iqm, low, high = iqm_interval({str(k): v for k, v in by_task.items()}, confidence=confidence)
                group["iqmSuccessRate"], group["iqmSuccessRateCi"] = iqm, [low, high]
        counts = [(len(v), int(sum(v))) for v in task_outcomes(
            members, task=lambda c: (c.get("env"), c.get("taskId"), c.get("perturbation"))).values()]
        if counts and min(n for n, _ in counts) > 1:
            group["passAtK"] = camel_table(pass_k_table(counts, confidence=confidence))
        out.append(group)
    return out


def group_scores(rows: Iterable[Mapping], group_by: str, confidence: float = 0.95) -> list[dict]:
    """:func:`group_cells` of episode rows (one cell per distinct grouping key and task, exact sums): rows carry the
    grouping fields besides the outcome fields of :func:`summarize`. Raises ValueError for an unknown ``group_by``."""
    keys = ("model", "env", "taskId", "scenario", "benchmark", "perturbation")
    by_key: dict[tuple, list[Mapping]] = defaultdict(list)
    for row in rows:
        by_key[tuple(row.get(k) for k in keys)].append(row)
    return group_cells([{**dict(zip(keys, key)), **cell_of_rows(members)} for key, members in by_key.items()],
                       group_by, confidence)


# ------------------------------------------------------------ latency histograms
# Per-step latencies are kept per episode as sparse log-bucketed histograms so they can be merged
# across episodes, shards and workers; 20 buckets per decade give ≈12 % resolution.
_BUCKETS_PER_DECADE = 20
_MIN_MS = 1e-3


def _bucket(ms: float) -> int:
    return max(0, int(math.floor(math.log10(max(ms, _MIN_MS) / _MIN_MS) * _BUCKETS_PER_DECADE)))


def histogram_add(hist: dict[str, int], ms: float) -> None:
    """Count one latency sample (milliseconds) into the sparse histogram ``hist`` in place."""
    key = str(_bucket(ms))
    hist[key] = hist.get(key, 0) + 1


def histogram_merge(hists: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Sum sparse histograms."""
    out: dict[str, int] = defaultdict(int)
    for h in hists:
        for k, v in h.items():
            out[k] += v
    return dict(out)


def histogram_percentile(hist: Mapping[str, int], q: float) -> float | None:
    """The ``q``-th percentile (0–100) of a latency histogram, in ms (bucket's geometric centre); None if empty."""
    total = sum(hist.values())
    if total == 0:
        return None
    rank = q / 100 * total
    seen = 0
    for key in sorted(hist, key=int):
        seen += hist[key]
        if seen >= rank:
            return _MIN_MS * 10 ** ((int(key) + 0.5) / _BUCKETS_PER_DECADE)
    return None  # pragma: no cover - unreachable: seen reaches total
