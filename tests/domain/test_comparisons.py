"""The comparison statistics against published worked examples, and the pairing, verdict and profile rules."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from evaluations.domain import comparisons, profiles, sample_sizes
from evaluations.domain.comparisons import NO_DIFFERENCE


def row(task, seed, success, reward=None, status="completed", perturbation=None):
    return {
        "task": task,
        "perturbation": perturbation,
        "seed": seed,
        "success": success,
        "reward": reward,
        "status": status,
    }


def pairs_from_table(both, a_only, b_only, neither):
    """Paired episodes realising a 2×2 table of (A success, B success)."""
    cells = [(True, True)] * both + [(True, False)] * a_only + [(False, True)] * b_only + [(False, False)] * neither
    return [
        {"seed": i, "a": {"success": a, "reward": None}, "b": {"success": b, "reward": None}}
        for i, (a, b) in enumerate(cells)
    ]


def reward_pairs(differences):
    return [
        {"seed": i, "a": {"success": None, "reward": 0.0}, "b": {"success": None, "reward": float(d)}}
        for i, d in enumerate(differences)
    ]


def assert_json_safe(value, path="$"):
    """Only plain JSON types, by exact type: numpy scalars (even float64, a float subclass) fail."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert type(k) is str, path
            assert_json_safe(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            assert_json_safe(v, f"{path}[{i}]")
    else:
        assert type(value) in (str, int, float, bool, type(None)), f"{path}: {type(value)}"
        if type(value) is float:
            assert math.isfinite(value), f"{path}: {value}"


# ------------------------------------------------------------------ Newcombe's paired interval
@pytest.mark.parametrize(
    "table,expected,digits",
    [
        # Newcombe (1998), Statistics in Medicine 17:2635–2650, Table II example (a, b, c, d) = (20, 12, 2, 16):
        # θ = 0.2, method 10 gives 0.0562 to 0.3292 (the value ratesci's test suite checks against the paper).
        ((20, 12, 2, 16), (0.2, 0.0562, 0.3292), 4),
        # Fagerland, Lydersen & Laake (2014), Statistics in Medicine 33:2850–2875, and their book Statistical
        # Analysis of Contingency Tables (2017), ch. 8: complete response before and after consolidation
        # therapy (Cavo et al. 2012), Newcombe square-and-add −0.0621 (−0.1186 to −0.0046).
        ((59, 6, 16, 80), (-0.0621, -0.1186, -0.0046), 4),
        # Same sources: airway hyper-responsiveness before/after stem cell transplantation (Bentur et al.
        # 2009), −0.2857 (−0.507 to −0.026).
        ((1, 1, 7, 12), (-0.2857, -0.507, -0.026), 3),
    ],
)
def test_it_matches_published_newcombe_intervals(table, expected, digits):
    delta, low, high = comparisons.newcombe_paired_interval(*table)
    assert round(delta, 4) == pytest.approx(expected[0])
    assert (round(low, digits), round(high, digits)) == pytest.approx(expected[1:])


def test_it_orients_the_success_difference_as_b_minus_a():
    """Newcombe's b (first only) is B-only here: the Cavo table read with B as the first condition."""
    result = comparisons.paired_success_difference(pairs_from_table(both=59, a_only=16, b_only=6, neither=80))
    assert result["n"] == 161
    assert result["table"] == {"bothSuccess": 59, "aOnly": 16, "bOnly": 6, "bothFail": 80}
    assert result["successRateA"] == pytest.approx(75 / 161)
    assert result["successRateB"] == pytest.approx(65 / 161)
    assert result["difference"] == pytest.approx(-10 / 161)
    assert result["differenceCi"] == pytest.approx([-0.1186, -0.0046], abs=5e-5)
    assert result["pValue"] == pytest.approx(0.052479, abs=5e-7)


def test_it_keeps_the_interval_inside_the_bounds_and_handles_all_concordant_tables():
    delta, low, high = comparisons.newcombe_paired_interval(30, 0, 0, 0)
    assert delta == 0.0 and -1 <= low < 0 < high <= 1
    delta, low, high = comparisons.newcombe_paired_interval(0, 30, 0, 0)
    assert delta == 1.0 and high == 1.0 and 0 < low < 1
    with pytest.raises(ValueError):
        comparisons.newcombe_paired_interval(0, 0, 0, 0)


# ------------------------------------------------------------------ McNemar
@pytest.mark.parametrize(
    "a_only,b_only,expected",
    [
        # Fagerland, Lydersen & Laake (2013), "The McNemar test for binary matched-pairs data: mid-p and
        # asymptotic are better than exact conditional", BMC Med Res Methodol 13:91, and their 2017 book, ch. 8:
        # Cavo et al. (2012), discordant pairs 6 and 16, exact conditional P = 0.052479.
        (6, 16, 0.052479),
        # Bentur et al. (2009), discordant pairs 1 and 7: P = 2·(1 + 8)/2⁸ = 0.0703 (0.070 in the paper).
        (1, 7, 0.0703125),
        (7, 1, 0.0703125),
    ],
)
def test_it_matches_published_mcnemar_exact_p_values(a_only, b_only, expected):
    assert comparisons.mcnemar_exact_p(a_only, b_only) == pytest.approx(expected, abs=5e-7)


def test_it_gives_p_one_without_discordant_pairs():
    assert comparisons.mcnemar_exact_p(0, 0) == 1.0
    result = comparisons.paired_success_difference(pairs_from_table(10, 0, 0, 5))
    assert result["pValue"] == 1.0 and result["difference"] == 0.0


def test_it_counts_undefined_success_and_reports_nothing_without_pairs():
    pairs = pairs_from_table(3, 1, 1, 0)
    pairs.append({"seed": 99, "a": {"success": None, "reward": 1.0}, "b": {"success": True, "reward": 2.0}})
    result = comparisons.paired_success_difference(pairs)
    assert (result["n"], result["undefined"]) == (5, 1)
    empty = comparisons.paired_success_difference([])
    assert empty["n"] == 0 and empty["difference"] is None and empty["pValue"] is None


# ------------------------------------------------------------------ returns: t interval + Wilcoxon
#: Darwin's Zea mays data: height differences (eighths of an inch), cross- minus self-fertilised, in 15 pairs.
DARWIN = [6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75]


def test_it_matches_wilcoxons_published_example():
    """Wilcoxon (1945), "Individual comparisons by ranking methods", Biometrics Bulletin 1:80–83, on Darwin's
    data: the two negative differences, −48 and −67, rank 10th and 14th by size, so the smaller rank sum is
    24; exact two-sided P = 1352/2¹⁵ = 0.04126, the value SciPy's reference documents for this example."""
    result = comparisons.paired_return_difference(reward_pairs(DARWIN))
    assert result["rankSums"] == {"positive": 96.0, "negative": 24.0}
    assert result["pValue"] == pytest.approx(1352 / 2**15, rel=1e-12)


def test_it_matches_fishers_t_on_the_same_data():
    """Fisher, The Design of Experiments (1935) §17: mean difference 20.93, t = 2.148 on 14 degrees of
    freedom; the interval is the Student-t one SciPy's one-sample t-test gives."""
    result = comparisons.paired_return_difference(reward_pairs(DARWIN))
    assert result["meanDifference"] == pytest.approx(20.933, abs=5e-4)
    low, high = result["meanDifferenceCi"]
    se = (high - low) / 2 / stats.t.ppf(0.975, 14)
    assert result["meanDifference"] / se == pytest.approx(2.148, abs=5e-4)
    reference = stats.ttest_1samp(DARWIN, 0).confidence_interval(0.95)
    assert (low, high) == pytest.approx((reference.low, reference.high))


def test_it_defines_the_degenerate_return_cases():
    empty = comparisons.paired_return_difference([])
    assert empty["n"] == 0 and empty["meanDifference"] is None and empty["pValue"] is None
    zeros = comparisons.paired_return_difference(reward_pairs([0, 0, 0]))
    assert zeros["pValue"] == 1.0 and zeros["meanDifferenceCi"] == [0.0, 0.0] and zeros["zeroDifferences"] == 3
    one = comparisons.paired_return_difference(reward_pairs([2.5]))
    assert one["meanDifference"] == 2.5 and one["meanDifferenceCi"] is None and one["pValue"] == 1.0
    same = comparisons.paired_return_difference(reward_pairs([1.0] * 6))
    assert same["meanDifferenceCi"] == [1.0, 1.0] and same["pValue"] == pytest.approx(2 / 2**6)
    # Zeros are dropped before ranking (Wilcoxon's convention), as McNemar drops concordant pairs.
    with_zeros = comparisons.paired_return_difference(reward_pairs([0, 0] + DARWIN))
    assert with_zeros["pValue"] == pytest.approx(1352 / 2**15) and with_zeros["n"] == 17
    assert comparisons.wilcoxon_p([]) is None


# ------------------------------------------------------------------ Holm
def test_it_matches_holms_published_example_and_statsmodels():
    """The Holm–Bonferroni worked example (Wikipedia, after Holm 1979): p = 0.01, 0.04, 0.03, 0.005 at α = 0.05
    rejects H1 and H4 only; adjusted p-values 0.03, 0.06, 0.06, 0.02."""
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.005]
    adjusted = comparisons.holm(p)
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [a < 0.05 for a in adjusted] == [True, False, False, True]
    many = [0.001, 0.2, 0.049, 0.9, 0.013, 0.013, 0.5]
    assert comparisons.holm(many) == pytest.approx(list(multipletests(many, method="holm")[1]))
    assert comparisons.holm([]) == []
    with pytest.raises(ValueError):
        comparisons.holm([0.5, 1.5])


# ------------------------------------------------------------------ pairing
def test_it_counts_paired_unpaired_and_errored_episodes():
    a = [row("t1", s, True) for s in range(10)] + [row("only-a", 0, True)]
    b = [row("t1", s, False) for s in range(5, 15)] + [row("only-b", 0, True), row("only-b", 1, True)]
    a[5]["status"] = "error"  # A's seed 5 errored: never paired, so B's seed 5 is unpaired
    result = comparisons.pair_episodes(a, b)
    assert result["pairs"] == 4
    assert result["unpaired"] == {"a": 5 + 1, "b": 6 + 2}
    assert result["errored"] == {"a": 1, "b": 0}
    groups = {g["task"]: g for g in result["groups"]}
    assert [p["seed"] for p in groups["t1"]["pairs"]] == [6, 7, 8, 9]
    assert groups["t1"]["unpaired"] == {"a": 5, "b": 6} and groups["t1"]["errored"] == {"a": 1, "b": 0}
    assert groups["only-a"]["pairs"] == [] and groups["only-a"]["unpaired"] == {"a": 1, "b": 0}
    assert groups["only-b"]["unpaired"] == {"a": 0, "b": 2}


def test_it_pairs_on_perturbation_too_and_duplicates_in_order():
    a = [row("t", 0, True, perturbation="obs_noise:0.1"), row("t", 0, True), row("t", 0, False)]
    b = [row("t", 0, False, perturbation="obs_noise:0.1"), row("t", 0, True)]
    result = comparisons.pair_episodes(a, b)
    assert [(g["perturbation"], len(g["pairs"]), g["unpaired"]) for g in result["groups"]] == [
        ("obs_noise:0.1", 1, {"a": 0, "b": 0}),
        (None, 1, {"a": 1, "b": 0}),  # the seed ran twice on A, once on B: first with first
    ]
    assert result["groups"][1]["pairs"][0]["a"]["success"] is True


def test_it_rejects_unknown_statuses():
    with pytest.raises(ValueError):
        comparisons.pair_episodes([row("t", 0, True, status="running")], [])


def test_it_says_so_when_nothing_pairs():
    result = comparisons.compare([row("t", s, True) for s in range(5)], [row("t", s, True) for s in range(5, 9)])
    assert result["paired"] == 0
    assert result["message"].startswith("Nothing pairs") and "5 completed" in result["message"]
    assert result["overall"]["verdict"] is None and result["overall"]["basis"] is None
    (task,) = result["tasks"]
    assert task["verdict"] is None and task["pAdjusted"] is None and task["message"].startswith("No episodes pair")
    assert comparisons.regression_verdict([row("t", 0, True)], [])["comparable"] is False


# ------------------------------------------------------------------ verdicts
def model_rows(rates, episodes=60, seed=0, reward=None):
    """Episodes of a model with success probability ``rates[task]``, with common random numbers per seed."""
    rows = []
    for task, rate in rates.items():
        rng = random.Random(f"{task}-{seed}")
        for s in range(episodes):
            draw = rng.random()
            rows.append(row(task, s, draw < rate, reward(task, s) if reward else float(draw < rate)))
    return rows


def test_a_regression_verdict_flips_when_the_candidate_is_swapped_for_a_worse_model():
    baseline = model_rows({"reach": 0.9, "push": 0.8, "pick": 0.7})
    # An equally good model with its own luck (other draws), then one much worse at pushing.
    same = model_rows({"reach": 0.9, "push": 0.8, "pick": 0.7}, seed=1)
    worse = model_rows({"reach": 0.9, "push": 0.2, "pick": 0.7}, seed=1)
    kept = comparisons.regression_verdict(baseline, same)
    assert kept["regressed"] is False and kept["regressions"] == [] and kept["comparable"] is True
    assert {t["verdict"] for t in kept["tasks"]} == {NO_DIFFERENCE}
    swapped = comparisons.regression_verdict(baseline, worse)
    assert swapped["regressed"] is True
    assert [(r["task"], r["difference"] < 0) for r in swapped["regressions"]] == [("push", True)]
    verdicts = {t["task"]: t["verdict"] for t in swapped["tasks"]}
    assert verdicts == {"reach": NO_DIFFERENCE, "push": "worse", "pick": NO_DIFFERENCE}
    # The other way round B is better.
    assert {t["task"]: t["verdict"] for t in comparisons.compare(worse, baseline)["tasks"]}["push"] == "better"


def test_the_verdict_follows_the_test_when_the_interval_disagrees():
    """Cavo et al. (2012) as B = after, A = before: Newcombe's interval (−0.1186, −0.0046) just excludes 0
    while McNemar's exact P = 0.052 does not reject at 0.05. The verdict rests on the test."""
    cells = [(True, True)] * 59 + [(True, False)] * 16 + [(False, True)] * 6 + [(False, False)] * 80
    a = [row("t", i, sa) for i, (sa, _) in enumerate(cells)]
    b = [row("t", i, sb) for i, (_, sb) in enumerate(cells)]
    (task,) = comparisons.compare(a, b)["tasks"]
    assert task["success"]["differenceCi"][1] < 0
    assert task["pAdjusted"] == pytest.approx(0.052479, abs=5e-7) and task["verdict"] == NO_DIFFERENCE


def test_it_adjusts_task_p_values_with_holm():
    a = model_rows({"t1": 0.5, "t2": 0.5, "t3": 0.5}, episodes=40)
    b = model_rows({"t1": 0.5, "t2": 0.5, "t3": 0.5}, episodes=40, seed=1)
    result = comparisons.compare(a, b)
    raw = [t["pValue"] for t in result["tasks"]]
    assert [t["pAdjusted"] for t in result["tasks"]] == pytest.approx(comparisons.holm(raw))
    assert all(t["basis"] == "success" for t in result["tasks"])


def test_it_decides_on_returns_when_success_is_undefined():
    def a_reward(task, s):
        return 100.0 + s % 7

    a = [{**r, "success": None} for r in model_rows({"walk": 0.5}, episodes=30, reward=a_reward)]
    b = [{**r, "success": None, "reward": r["reward"] + 5.0 + (r["seed"] % 3)} for r in a]
    result = comparisons.compare(a, b)
    (task,) = result["tasks"]
    assert task["basis"] == "return" and task["success"]["n"] == 0 and task["success"]["undefined"] == 30
    assert task["verdict"] == "better" and task["return"]["meanDifference"] == pytest.approx(6.0)
    assert comparisons.compare(b, a)["tasks"][0]["verdict"] == "worse"


def test_it_returns_json_safe_results():
    a = model_rows({"t1": 0.9, "t2": 0.4}) + [row("t3", 0, None, status="error")]
    b = model_rows({"t1": 0.3, "t2": 0.4}, seed=2)
    assert_json_safe(comparisons.regression_verdict(a, b))
    assert_json_safe(comparisons.compare([], []))
    assert_json_safe(profiles.performance_profile({"t": [0.1, 0.2]}, [0.0, 0.5], reps=50))
    assert_json_safe(sample_sizes.sample_size_estimate(10))


# ------------------------------------------------------------------ performance profiles
SCORES = {"t1": [0.1, 0.2, 0.3, 0.4], "t2": [0.5, 0.6, 0.7, 0.8]}


def test_a_performance_profile_counts_scores_above_each_threshold():
    result = profiles.performance_profile(SCORES, [0.0, 0.25, 0.55, 0.9], reps=500, seed=3)
    # τ = 0.25: t1 has 2 of 4 runs above, t2 all 4 → (0.5 + 1)/2. τ = 0.55: 0 and 3/4 → 0.375.
    assert result["fraction"] == pytest.approx([1.0, 0.75, 0.375, 0.0])
    for f, low, high in zip(result["fraction"], result["low"], result["high"]):
        assert 0 <= low <= f <= high <= 1
    assert result["low"][0] == result["high"][0] == 1.0  # every resample is above 0
    assert result == profiles.performance_profile(SCORES, [0.0, 0.25, 0.55, 0.9], reps=500, seed=3)
    assert result["tasks"] == 2 and result["reps"] == 500


def test_a_single_run_per_task_has_a_zero_width_band():
    result = profiles.performance_profile({"a": [0.3], "b": [0.7]}, [0.5], reps=100)
    assert result["fraction"] == result["low"] == result["high"] == [0.5]


def test_a_task_mean_profile_bootstraps_episodes_like_the_iqm():
    outcomes = {"easy": [1.0] * 18 + [0.0] * 2, "mid": [1.0] * 10 + [0.0] * 10, "hard": [1.0] * 2 + [0.0] * 18}
    result = profiles.task_mean_profile(outcomes, [0.05, 0.3, 0.75, 0.95], reps=1000, seed=0)
    assert result["fraction"] == pytest.approx([1.0, 2 / 3, 1 / 3, 0.0])
    for f, low, high in zip(result["fraction"], result["low"], result["high"]):
        assert low <= f <= high
    assert result["low"][1] < result["high"][1]  # "mid" and "hard" move around 0.3 and 0.75 under resampling


def test_profiles_reject_empty_input():
    with pytest.raises(ValueError):
        profiles.performance_profile({}, [0.5])
    with pytest.raises(ValueError):
        profiles.task_mean_profile({"t": []}, [0.5])
    with pytest.raises(ValueError):
        profiles.performance_profile(SCORES, [])


# ------------------------------------------------------------------ sample sizes
def test_it_gives_wilson_sample_sizes_next_to_walds():
    """Wald: n = z²·p(1−p)/h² = 96.04 → 97 episodes for ±10 pp at p = 0.5 (385 for ±5 pp). Wilson's
    half-width at p = 0.5 is (z/2)/sqrt(n + z²), so it needs z²/4h² − z²: 92.2 → 93 and 380.3 → 381."""
    z = stats.norm.ppf(0.975)
    assert z * z * 0.25 / 0.1**2 == pytest.approx(96.04, abs=0.01)
    assert sample_sizes.episodes_for_half_width(0.10) == 93
    assert sample_sizes.episodes_for_half_width(0.05) == 381
    assert sample_sizes.success_interval_half_width(93) <= 0.10 < sample_sizes.success_interval_half_width(92)
    assert sample_sizes.success_interval_half_width(381) <= 0.05 < sample_sizes.success_interval_half_width(380)
    assert sample_sizes.success_interval_half_width(50) == pytest.approx((z / 2) / (50 + z * z) ** 0.5)


def test_the_half_width_is_the_wilson_interval_at_the_assumed_rate():
    from evaluations.domain.scoring import wilson_interval

    low, high = wilson_interval(12, 40)
    assert sample_sizes.success_interval_half_width(40, p=0.3) == pytest.approx((high - low) / 2)
    # p = 0.5 is the worst case: an observed rate away from it needs fewer episodes.
    assert sample_sizes.episodes_for_half_width(0.05, p=0.1) == 141  # against 381 at p = 0.5
    assert sample_sizes.episodes_for_half_width(0.6) == 1
    with pytest.raises(ValueError):
        sample_sizes.episodes_for_half_width(0)
    with pytest.raises(ValueError):
        sample_sizes.success_interval_half_width(0)


def test_it_warns_below_twenty_episodes():
    assert sample_sizes.MIN_EPISODES_WARNING == 20
    few = sample_sizes.sample_size_estimate(10)
    assert few["warning"] and "±26 pp" in few["warning"]
    assert few["episodesFor5pp"] == 381 and few["episodesFor10pp"] == 93
    assert sample_sizes.sample_size_estimate(20)["warning"] is None
