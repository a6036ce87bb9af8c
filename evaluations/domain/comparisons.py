"""Paired comparisons of two models on the episodes they share, and regression verdicts against a baseline.

Pure functions, no ORM and no Django imports: plain lists and dicts in, JSON-safe dicts out (floats, ints,
bools, strings and None; never numpy scalars, never NaN). Model A is the reference (the baseline) and model B
the challenger (the candidate): every difference is B − A, and a verdict says how B compares with A.

Conventions follow ``evaluations.domain.scoring``: success rates are fractions in [0, 1]; rewards are undiscounted
episode returns, and a higher return is better; intervals are two-sided at ``confidence`` (95 % by default);
errored episodes produce no outcome, so they are counted, never paired.

An episode row is ``{"task", "perturbation", "seed", "success": bool | None, "reward": float | None,
"status": "completed" | "error"}``. ``task`` and ``perturbation`` are hashable labels (strings; the
perturbation is the workload's label such as ``"obs_noise:0.1"``, or None); ``seed`` is the episode seed.
Two episodes pair when they share ``(task, perturbation, seed)``: same environment draw, two policies.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from scipy import stats

from .scoring import mean_interval, wilson_interval

__all__ = [
    "NO_DIFFERENCE",
    "compare",
    "holm",
    "mcnemar_exact_p",
    "newcombe_paired_interval",
    "pair_episodes",
    "paired_return_difference",
    "paired_success_difference",
    "regression_verdict",
    "wilcoxon_p",
]

NO_DIFFERENCE = "no detectable difference"


# ------------------------------------------------------------------ pairing
def _outcome(row: Mapping) -> dict:
    success = row.get("success")
    reward = row.get("reward")
    if reward is not None:
        reward = float(reward)
        if not math.isfinite(reward):
            reward = None
    return {"success": None if success is None else bool(success), "reward": reward}


def pair_episodes(a_rows: Iterable[Mapping], b_rows: Iterable[Mapping]) -> dict:
    """Pair model A's and model B's episodes on ``(task, perturbation, seed)``, per ``(task, perturbation)``.

    Only completed episodes pair. Errored episodes are counted in ``errored`` and never paired, so the
    completed partner of an errored episode is counted in ``unpaired``. A seed that occurs more than once on
    a side (the same seed run twice) pairs its k-th occurrence on A with its k-th on B; leftovers are unpaired.
    Returns ``{"pairs": int, "unpaired": {"a", "b"}, "errored": {"a", "b"}, "groups": [group]}``, each group
    ``{"task", "perturbation", "pairs": [{"seed", "a": {"success", "reward"}, "b": {...}}], "unpaired": {"a",
    "b"}, "errored": {"a", "b"}}``, groups in order of first appearance (A's rows, then B's), including those
    where only one side ran. A non-finite reward counts as undefined (None). Raises ValueError for a status
    other than ``"completed"`` or ``"error"``, and KeyError for a row missing ``task``, ``perturbation``,
    ``seed`` or ``status``.
    """
    groups: dict[tuple, dict] = {}
    completed: dict[str, dict[tuple, list[dict]]] = {}
    for side, rows in (("a", a_rows), ("b", b_rows)):
        by_key: dict[tuple, list[dict]] = defaultdict(list)
        for row in rows:
            task, perturbation = row["task"], row["perturbation"]
            group = groups.setdefault(
                (task, perturbation),
                {
                    "task": task,
                    "perturbation": perturbation,
                    "pairs": [],
                    "unpaired": {"a": 0, "b": 0},
                    "errored": {"a": 0, "b": 0},
                },
            )
            if row["status"] == "error":
                group["errored"][side] += 1
            elif row["status"] == "completed":
                by_key[(task, perturbation, row["seed"])].append(_outcome(row))
            else:
                raise ValueError(f"episode status must be 'completed' or 'error', got {row['status']!r}")
        completed[side] = by_key
    for key, a_list in completed["a"].items():
        b_list = completed["b"].get(key, [])
        group = groups[key[:2]]
        group["pairs"].extend({"seed": key[2], "a": a, "b": b} for a, b in zip(a_list, b_list))
        group["unpaired"]["a"] += max(0, len(a_list) - len(b_list))
    for key, b_list in completed["b"].items():
        groups[key[:2]]["unpaired"]["b"] += max(0, len(b_list) - len(completed["a"].get(key, [])))
    out_groups = list(groups.values())
    return {
        "pairs": sum(len(g["pairs"]) for g in out_groups),
        "unpaired": {s: sum(g["unpaired"][s] for g in out_groups) for s in ("a", "b")},
        "errored": {s: sum(g["errored"][s] for g in out_groups) for s in ("a", "b")},
        "groups": out_groups,
    }


# ------------------------------------------------------------------ success: Newcombe + McNemar
def newcombe_paired_interval(
    both: int, first_only: int, second_only: int, neither: int, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Difference of two paired proportions with Newcombe's hybrid score interval (method 10).

    Newcombe RG (1998), "Improved confidence intervals for the difference between binomial proportions based
    on paired data", Statistics in Medicine 17:2635–2650, method 10: Wilson (1927) intervals ``(l1, u1)`` for
    ``p1 = (both + first_only)/n`` and ``(l2, u2)`` for ``p2 = (both + second_only)/n`` are combined as
    ``Δ − sqrt((p1−l1)² − 2φ(p1−l1)(u2−p2) + (u2−p2)²)`` and ``Δ + sqrt((u1−p1)² − 2φ(u1−p1)(p2−l2) +
    (p2−l2)²)``, where φ is the phi coefficient of the 2×2 table with Newcombe's correction: with
    ``C = both·neither − first_only·second_only``, φ uses ``C − n/2`` when ``C > n/2``, 0 when
    ``0 ≤ C ≤ n/2``, ``C`` when ``C < 0``, and is 0 when a margin is empty. No library implements it.
    Returns ``(Δ, low, high)`` with ``Δ = p1 − p2 = (first_only − second_only)/n``, the limits in [−1, 1].
    Raises ValueError if a count is negative or there is no pair.
    """
    counts = (both, first_only, second_only, neither)
    if min(counts) < 0:
        raise ValueError(f"counts must be non-negative, got {counts}")
    n = sum(counts)
    if n == 0:
        raise ValueError("newcombe_paired_interval needs at least one pair")
    p1, p2 = (both + first_only) / n, (both + second_only) / n
    l1, u1 = wilson_interval(both + first_only, n, confidence)
    l2, u2 = wilson_interval(both + second_only, n, confidence)
    margins = (both + first_only) * (second_only + neither) * (both + second_only) * (first_only + neither)
    c = both * neither - first_only * second_only
    if margins == 0 or 0 <= c <= n / 2:
        phi = 0.0
    else:
        phi = (c - n / 2 if c > 0 else c) / math.sqrt(margins)
    dl1, du1, dl2, du2 = p1 - l1, u1 - p1, p2 - l2, u2 - p2
    delta = (first_only - second_only) / n
    low = delta - math.sqrt(max(0.0, dl1 * dl1 - 2 * phi * dl1 * du2 + du2 * du2))
    high = delta + math.sqrt(max(0.0, du1 * du1 - 2 * phi * du1 * dl2 + dl2 * dl2))
    return delta, max(-1.0, low), min(1.0, high)


def mcnemar_exact_p(a_only: int, b_only: int) -> float:
    """McNemar's exact (conditional) two-sided p-value: a binomial test of ``b_only`` successes in the
    ``a_only + b_only`` discordant pairs at probability ½ (``scipy.stats.binomtest``). Returns 1.0 when there
    is no discordant pair (nothing to test). Raises ValueError if a count is negative."""
    if a_only < 0 or b_only < 0:
        raise ValueError(f"counts must be non-negative, got {a_only}, {b_only}")
    if a_only + b_only == 0:
        return 1.0
    return float(stats.binomtest(b_only, a_only + b_only, 0.5).pvalue)


def paired_success_difference(pairs: Sequence[Mapping], confidence: float = 0.95) -> dict:
    """Compare success on paired episodes: ``Δ = p_B − p_A`` with Newcombe's interval and McNemar's exact test.

    ``pairs`` are the ``pairs`` of a :func:`pair_episodes` group (or several groups' pairs concatenated). Pairs
    whose success is None on either side are counted in ``undefined`` and left out. Returns ``{"n",
    "undefined", "table": {"bothSuccess", "aOnly", "bOnly", "bothFail"}, "successRateA", "successRateB",
    "difference", "differenceCi": [low, high], "pValue"}``; the rates, the difference, its interval
    (:func:`newcombe_paired_interval`) and the p-value (:func:`mcnemar_exact_p`) are None when ``n == 0``.
    """
    table = {"bothSuccess": 0, "aOnly": 0, "bOnly": 0, "bothFail": 0}
    undefined = 0
    for pair in pairs:
        a, b = pair["a"]["success"], pair["b"]["success"]
        if a is None or b is None:
            undefined += 1
        else:
            table["bothSuccess" if a and b else "aOnly" if a else "bOnly" if b else "bothFail"] += 1
    n = sum(table.values())
    out = {"n": n, "undefined": undefined, "table": table, "successRateA": None, "successRateB": None}
    out.update(difference=None, differenceCi=None, pValue=None)
    if n == 0:
        return out
    both, a_only, b_only, neither = table["bothSuccess"], table["aOnly"], table["bOnly"], table["bothFail"]
    delta, low, high = newcombe_paired_interval(both, b_only, a_only, neither, confidence)
    out.update(
        successRateA=(both + a_only) / n,
        successRateB=(both + b_only) / n,
        difference=delta,
        differenceCi=[low, high],
        pValue=mcnemar_exact_p(a_only, b_only),
    )
    return out


# ------------------------------------------------------------------ returns: t interval + Wilcoxon
def wilcoxon_p(differences: Sequence[float]) -> float | None:
    """Two-sided Wilcoxon signed-rank p-value for paired differences (``scipy.stats.wilcoxon``).

    Zero differences are dropped first (Wilcoxon's own convention, SciPy's ``zero_method="wilcox"``, as
    McNemar's test drops concordant pairs). Cases: no difference at all → None; every difference zero → 1.0
    (no evidence either way; SciPy would warn); otherwise SciPy's ``method="auto"``: exact for up to 50
    distinct non-zero differences, an exhaustive permutation for up to 13 with ties, else the normal
    approximation with the tie correction. A single non-zero difference gives 1.0.
    """
    if not differences:
        return None
    nonzero = [d for d in differences if d != 0]
    if not nonzero:
        return 1.0
    return float(stats.wilcoxon(nonzero).pvalue)


def paired_return_difference(pairs: Sequence[Mapping], confidence: float = 0.95) -> dict:
    """Compare returns on paired episodes: the mean paired difference B − A and a Wilcoxon signed-rank test.

    Pairs whose reward is None on either side are counted in ``undefined`` and left out. Returns ``{"n",
    "undefined", "meanA", "meanB", "meanDifference", "meanDifferenceCi": [low, high], "zeroDifferences",
    "rankSums": {"positive", "negative"}, "pValue"}``. The interval is Student-t on the differences
    (:func:`evaluations.domain.scoring.mean_interval`): None when ``n < 2``, zero-width when every difference is
    the same. ``rankSums`` are the signed-rank sums of the non-zero differences (average ranks for ties), the
    direction the test sees; ``pValue`` follows :func:`wilcoxon_p`. Everything but the counts is None when
    ``n == 0``.
    """
    a_values, b_values = [], []
    for pair in pairs:
        a, b = pair["a"]["reward"], pair["b"]["reward"]
        if a is not None and b is not None:
            a_values.append(a)
            b_values.append(b)
    n = len(a_values)
    diffs = [b - a for a, b in zip(a_values, b_values)]
    out = {"n": n, "undefined": len(pairs) - n, "meanA": None, "meanB": None, "meanDifference": None}
    out.update(meanDifferenceCi=None, zeroDifferences=sum(1 for d in diffs if d == 0), rankSums=None, pValue=None)
    if n == 0:
        return out
    mean, low, high = mean_interval(diffs, confidence)
    nonzero = [d for d in diffs if d != 0]
    ranks = stats.rankdata([abs(d) for d in nonzero]) if nonzero else []
    positive = float(sum(r for r, d in zip(ranks, nonzero) if d > 0))
    out.update(
        meanA=math.fsum(a_values) / n,
        meanB=math.fsum(b_values) / n,
        meanDifference=mean,
        meanDifferenceCi=None if low is None else [low, high],
        rankSums={"positive": positive, "negative": float(sum(ranks)) - positive},
        pValue=wilcoxon_p(diffs),
    )
    return out


# ------------------------------------------------------------------ multiplicity
def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979, "A simple sequentially rejective multiple test
    procedure", Scand. J. Statist. 6:65–70), in the input order, via statsmodels'
    ``multipletests(method="holm")``. Rejecting where the adjusted p < α controls the family-wise error rate at
    α. Returns ``[]`` for no p-value. Raises ValueError if a p-value is outside [0, 1] or not a number."""
    if not p_values:
        return []
    if not all(0.0 <= p <= 1.0 for p in p_values):
        raise ValueError(f"p-values must lie in [0, 1], got {list(p_values)}")
    # statsmodels pulls in pandas (about a second); only the comparisons need it.
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(p_values), method="holm")[1]]


# ------------------------------------------------------------------ verdicts
def _summary(pairs: Sequence[Mapping], confidence: float) -> dict:
    """Both comparisons of a set of pairs and the test a verdict rests on (``basis``)."""
    success = paired_success_difference(pairs, confidence)
    returns = paired_return_difference(pairs, confidence)
    basis = "success" if success["n"] else "return" if returns["n"] else None
    p_value = success["pValue"] if basis == "success" else returns["pValue"] if basis == "return" else None
    return {"paired": len(pairs), "success": success, "return": returns, "basis": basis, "pValue": p_value}


def _verdict(summary: Mapping, p_value: float | None, alpha: float) -> str | None:
    if summary["basis"] is None or p_value is None:
        return None
    if p_value >= alpha:
        return NO_DIFFERENCE
    if summary["basis"] == "success":
        sign = summary["success"]["difference"]
    else:
        sums = summary["return"]["rankSums"]
        sign = sums["positive"] - sums["negative"]
    return "better" if sign > 0 else "worse" if sign < 0 else NO_DIFFERENCE


def _left_out(unpaired: Mapping, errored: Mapping) -> str:
    parts = []
    if unpaired["a"] or unpaired["b"]:
        parts.append(f"{unpaired['a']} of A's and {unpaired['b']} of B's completed episodes have no partner")
    if errored["a"] or errored["b"]:
        parts.append(f"{errored['a']} of A's and {errored['b']} of B's episodes errored")
    return "; ".join(parts) + "; they are left out of the comparison." if parts else ""


def _task_message(group: Mapping, summary: Mapping) -> str | None:
    if not group["pairs"]:
        return (
            f"No episodes pair on this task: A has {group['unpaired']['a']} completed episodes and B has "
            f"{group['unpaired']['b']}, with no seed in common."
            + (f" {_left_out({'a': 0, 'b': 0}, group['errored'])}" if any(group["errored"].values()) else "")
        )
    notes = [_left_out(group["unpaired"], group["errored"])]
    if summary["basis"] is None:
        notes.append("Neither success nor return is defined on the paired episodes.")
    return " ".join(n for n in notes if n) or None


def _overall_message(paired: Mapping) -> str | None:
    if paired["pairs"] == 0:
        return (
            f"Nothing pairs: none of A's {paired['unpaired']['a']} completed episodes shares a (task, "
            f"perturbation, seed) with B's {paired['unpaired']['b']}; no comparison was made."
        )
    return _left_out(paired["unpaired"], paired["errored"]) or None


def compare(
    a_rows: Iterable[Mapping], b_rows: Iterable[Mapping], alpha: float = 0.05, confidence: float = 0.95
) -> dict:
    """Is model B better than model A, per task and overall, on the episodes they share?

    Pairs the rows with :func:`pair_episodes`; per task (``task`` × ``perturbation``) and overall (all pairs
    pooled) reports :func:`paired_success_difference` and :func:`paired_return_difference`. The verdict of a
    task rests on one test, its ``basis``: McNemar's exact test on success when any pair has success defined
    on both sides (``"success"``), otherwise the Wilcoxon signed-rank test on returns (``"return"``, for envs
    without a success criterion; higher returns are better, and the direction is the larger signed-rank sum).
    The tasks' p-values are adjusted together with :func:`holm`; a task is ``"better"``/``"worse"`` when its
    adjusted p < ``alpha`` (direction from the sign of Δ), else ``"no detectable difference"``; a task with
    no pair (or nothing defined) has verdict, p-values and basis None and takes no part in the adjustment.
    The overall verdict is one pooled test, unadjusted; its Δ weights tasks by their pair counts, and its return
    comparison pools returns whose scales differ between tasks (read returns per task). Intervals
    are unadjusted ``confidence`` intervals, so near α one may exclude 0 while the verdict says no detectable
    difference (the verdict follows the adjusted test).

    Returns ``{"alpha", "confidence", "paired", "unpaired": {"a", "b"}, "errored": {"a", "b"}, "message",
    "tasks": [{"task", "perturbation", "paired", "unpaired", "errored", "success", "return", "basis",
    "pValue", "pAdjusted", "verdict", "message"}], "overall": {"paired", "success", "return", "basis",
    "pValue", "pAdjusted", "verdict"}}``; ``message`` says what was left out and when nothing pairs, else is
    None. Raises ValueError if ``alpha`` or ``confidence`` is outside (0, 1), and as :func:`pair_episodes`.
    """
    if not 0 < alpha < 1 or not 0 < confidence < 1:
        raise ValueError(f"alpha and confidence must lie in (0, 1), got {alpha} and {confidence}")
    paired = pair_episodes(a_rows, b_rows)
    tasks = []
    for group in paired["groups"]:
        summary = _summary(group["pairs"], confidence)
        tasks.append(
            {
                "task": group["task"],
                "perturbation": group["perturbation"],
                **summary,
                "unpaired": group["unpaired"],
                "errored": group["errored"],
                "pAdjusted": None,
                "verdict": None,
                "message": _task_message(group, summary),
            }
        )
    tested = [t for t in tasks if t["pValue"] is not None]
    for task, adjusted in zip(tested, holm([t["pValue"] for t in tested])):
        task["pAdjusted"] = adjusted
    for task in tasks:
        task["verdict"] = _verdict(task, task["pAdjusted"], alpha)
    overall = _summary([p for g in paired["groups"] for p in g["pairs"]], confidence)
    overall.update(pAdjusted=None, verdict=_verdict(overall, overall["pValue"], alpha))
    return {
        "alpha": alpha,
        "confidence": confidence,
        "paired": paired["pairs"],
        "unpaired": paired["unpaired"],
        "errored": paired["errored"],
        "message": _overall_message(paired),
        "tasks": tasks,
        "overall": overall,
    }


def regression_verdict(
    baseline_rows: Iterable[Mapping],
    candidate_rows: Iterable[Mapping],
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> dict:
    """Did the candidate regress against the baseline? :func:`compare` with A = baseline, B = candidate.

    Returns the comparison plus ``"regressed"`` (True when any task's verdict is ``"worse"`` after Holm's
    adjustment), ``"regressions"`` (``[{"task", "perturbation", "difference", "pAdjusted"}]`` of those tasks;
    ``difference`` is Δ on success or the mean return difference) and ``"comparable"`` (False when nothing
    pairs: then ``regressed`` is False because nothing was tested, and a CI gate should fail on it too).
    Raises as :func:`compare`.
    """
    result = compare(baseline_rows, candidate_rows, alpha, confidence)
    regressions = [
        {
            "task": t["task"],
            "perturbation": t["perturbation"],
            "pAdjusted": t["pAdjusted"],
            "difference": t["success"]["difference"] if t["basis"] == "success" else t["return"]["meanDifference"],
        }
        for t in result["tasks"]
        if t["verdict"] == "worse"
    ]
    return {**result, "regressed": bool(regressions), "regressions": regressions, "comparable": result["paired"] > 0}
