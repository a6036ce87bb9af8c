"""Scoring math against hand-computed values."""

import math

import pytest

from evaluations.domain import outcomes, scoring
from evaluations.planning import shard_ranges


def hand_wilson(k, n, z=1.959963984540054):
    # Wilson (1927): (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.mark.parametrize(
    "k,n,expected",
    [
        (8, 10, (0.4902, 0.9433)),  # the textbook example (e.g. statsmodels proportion_confint method="wilson")
        (5, 10, (0.2366, 0.7634)),
        (0, 10, (0.0, 0.2775)),
        (10, 10, (0.7225, 1.0)),
        (1, 1, (0.2065, 1.0)),
    ],
)
def test_it_matches_known_wilson_intervals(k, n, expected):
    low, high = scoring.wilson_interval(k, n)
    assert low == pytest.approx(expected[0], abs=5e-5)
    assert high == pytest.approx(expected[1], abs=5e-5)


def test_it_matches_the_formula_and_ends_exactly_at_the_bounds():
    for k, n in [(3, 7), (37, 50), (1, 200)]:
        assert scoring.wilson_interval(k, n) == pytest.approx(hand_wilson(k, n))
    assert scoring.wilson_interval(10, 10)[1] == 1.0
    assert scoring.wilson_interval(0, 10)[0] == 0.0


def test_it_rejects_bad_counts():
    with pytest.raises(ValueError):
        scoring.wilson_interval(0, 0)
    with pytest.raises(ValueError):
        scoring.wilson_interval(11, 10)


def test_mean_interval_uses_student_t():
    mean, low, high = scoring.mean_interval([1, 2, 3, 4, 5])
    # sd = sqrt(2.5), se = sd/sqrt(5) = 0.70711, t(0.975, 4) = 2.77645 → half-width 1.96324
    assert mean == 3
    assert low == pytest.approx(3 - 1.963243, abs=1e-5)
    assert high == pytest.approx(3 + 1.963243, abs=1e-5)
    assert scoring.mean_interval([7.0]) == (7.0, None, None)
    assert scoring.mean_interval([2.0, 2.0, 2.0]) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError):
        scoring.mean_interval([])


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        (dict(env_flag=True, criterion={"kind": "survived"}, terminated=True, reward=0, stop_condition="terminated"), (True, "env")),
        (dict(env_flag=False, criterion=None, terminated=True, reward=0, stop_condition="terminated"), (False, "env")),
        (dict(env_flag=None, criterion={"kind": "survived"}, terminated=False, reward=500, stop_condition="time_limit"), (True, "criterion")),
        (dict(env_flag=None, criterion={"kind": "survived"}, terminated=False, reward=50, stop_condition="max_steps"), (True, "criterion")),
        (dict(env_flag=None, criterion={"kind": "survived"}, terminated=False, reward=50, stop_condition="wall_time"), (False, "criterion")),
        (dict(env_flag=None, criterion={"kind": "survived"}, terminated=True, reward=20, stop_condition="terminated"), (False, "criterion")),
        (dict(env_flag=None, criterion={"kind": "return_at_least", "threshold": -200}, terminated=False, reward=-150, stop_condition="time_limit"), (True, "criterion")),
        (dict(env_flag=None, criterion={"kind": "return_at_least", "threshold": -200}, terminated=False, reward=-250, stop_condition="time_limit"), (False, "criterion")),
        # Nothing defines success: undefined, never a guess from `terminated` (on CartPole it means the pole fell).
        (dict(env_flag=None, criterion=None, terminated=True, reward=0, stop_condition="terminated"), (None, "undefined")),
        (dict(env_flag=None, criterion=None, terminated=False, reward=500, stop_condition="time_limit"), (None, "undefined")),
        (dict(env_flag=None, criterion={"kind": "env_flag"}, terminated=True, reward=0, stop_condition="terminated"), (None, "undefined")),
        (dict(env_flag=True, criterion={"kind": "env_flag"}, terminated=True, reward=0, stop_condition="terminated"), (True, "env")),
        # A criterion the request declared decides before the env's flag; the env's own declaration after it.
        (dict(env_flag=True, criterion={"kind": "return_at_least", "threshold": 10, "declaredBy": "request"}, terminated=True,
              reward=0, stop_condition="terminated"), (False, "criterion")),
        (dict(env_flag=True, criterion={"kind": "return_at_least", "threshold": 10, "declaredBy": "env"}, terminated=True,
              reward=0, stop_condition="terminated"), (True, "env")),
    ],
)
def test_episode_success_request_criterion_then_env_flag_then_env_criterion_else_undefined(kwargs, expected):
    assert outcomes.episode_success(**kwargs) == expected


@pytest.mark.parametrize("criterion,problems", [
    ({"kind": "survived", "steps": 500}, []),
    ({"kind": "return_at_least", "threshold": -200.5, "description": "solved"}, []),
    ({"kind": "env_flag"}, []),
    ("survived", [("", 'must be an object such as {"kind": "survived", "steps": 500}')]),
    ({"kind": "vibes"}, [(".kind", "must be one of survived, terminated, return_at_least, env_flag, got 'vibes'")]),
    ({"kind": "return_at_least"}, [(".threshold", "is required for return_at_least: a finite number")]),
    ({"kind": "survived", "steps": 0}, [(".steps", "must be a whole number ≥ 1")]),
    ({"kind": "terminated", "steps": 5}, [(".steps", "applies to survived only, not terminated")]),
    ({"kind": "terminated", "colour": "red"}, [(".colour", "is not a field of a success criterion (description, kind, steps, threshold)")]),
])
def test_criteria_are_validated_with_paths(criterion, problems):
    assert outcomes.criterion_problems(criterion) == problems


def test_success_undefined_scores_returns_but_no_rate():
    rows = [{**_row("m", "b/t", None, 10.0), "successSource": "undefined"}, {**_row("m", "b/t", None, 30.0), "successSource": "undefined"}]
    (g,) = scoring.group_scores(rows, "task")
    assert g["successRate"] is None and g["successRateCi"] is None and g["successUndefined"] == 2
    assert g["meanReward"] == 20.0 and g["episodes"] == 2 and g["successSources"] == {"undefined": 2}
    mixed = scoring.group_scores(rows + [_row("m", "c/u", True, 1.0), _row("m", "d/v", False, 1.0)], "model")[0]
    assert mixed["successRate"] == 0.5 and mixed["successUndefined"] == 2 and mixed["tasks"] == 3
    assert mixed["iqmSuccessRate"] == pytest.approx(0.5)  # over the two tasks that define success


def test_episode_success_rejects_unknown_criterion():
    with pytest.raises(ValueError):
        outcomes.episode_success(env_flag=None, criterion={"kind": "vibes"}, terminated=False, reward=0, stop_condition="x")


def _row(model, task, success, reward, status="completed", steps=10):
    bench, scen = task.split("/", 1)
    return {"model": model, "env": "e", "taskId": task, "scenario": scen, "benchmark": bench, "perturbation": "none",
            "status": status, "success": success, "reward": reward, "steps": steps, "successSource": "criterion"}


def test_group_scores_per_model_and_task_excludes_errors():
    rows = [_row("m1", "b/t1", True, 1.0), _row("m1", "b/t1", False, 0.0), _row("m1", "b/t1", None, None, status="error"),
            _row("m2", "b/t1", True, 3.0), _row("m1", "c/t2", True, 2.0)]
    groups = scoring.group_scores(rows, "task")
    assert [g["key"] for g in groups] == [
        {"model": "m1", "env": "e", "taskId": "b/t1", "perturbation": "none"},
        {"model": "m2", "env": "e", "taskId": "b/t1", "perturbation": "none"},
        {"model": "m1", "env": "e", "taskId": "c/t2", "perturbation": "none"},
    ]
    first = groups[0]
    assert (first["episodes"], first["successes"], first["errors"]) == (2, 1, 1)
    assert first["successRate"] == 0.5
    assert first["successRateCi"] == pytest.approx(list(hand_wilson(1, 2)))
    assert first["meanReward"] == 0.5 and first["meanSteps"] == 10
    assert first["successSources"] == {"criterion": 2}  # the errored episode gave no verdict
    by_model = scoring.group_scores(rows, "model")
    assert [(g["key"], g["episodes"]) for g in by_model] == [({"model": "m1"}, 3), ({"model": "m2"}, 1)]
    by_bench = scoring.group_scores(rows, "benchmark")
    assert {(g["key"]["model"], g["key"]["benchmark"]) for g in by_bench} == {("m1", "b"), ("m2", "b"), ("m1", "c")}
    with pytest.raises(ValueError):
        scoring.group_scores(rows, "colour")


def test_group_with_only_errors_has_no_rates():
    (g,) = scoring.group_scores([_row("m", "b/t", None, None, status="error")], "model")
    assert g["episodes"] == 0 and g["errors"] == 1 and g["successRate"] is None and g["successRateCi"] is None


def test_latency_histogram_percentiles_are_within_bucket_resolution():
    hist: dict = {}
    samples = [0.5] * 50 + [2.0] * 45 + [40.0] * 5
    for s in samples:
        scoring.histogram_add(hist, s)
    merged = scoring.histogram_merge([hist, hist])
    assert sum(merged.values()) == 200
    assert scoring.histogram_percentile(merged, 50) == pytest.approx(0.5, rel=0.13)
    assert scoring.histogram_percentile(merged, 90) == pytest.approx(2.0, rel=0.13)
    assert scoring.histogram_percentile(merged, 99) == pytest.approx(40.0, rel=0.13)
    assert scoring.histogram_percentile({}, 50) is None


@pytest.mark.parametrize("episodes,workers,cap", [(10, 1, 100), (10, 3, 100), (250, 1, 100), (7, 7, 100), (5, 1, 2)])
def test_shard_ranges_cover_every_episode_once(episodes, workers, cap):
    ranges = shard_ranges(episodes, workers, cap)
    covered = [i for start, stop in ranges for i in range(start, stop)]
    assert covered == list(range(episodes))
    assert len(ranges) >= min(workers, episodes)
    assert max(stop - start for start, stop in ranges) <= cap
    sizes = [stop - start for start, stop in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_iqm_is_the_trimmed_mean_of_task_means_with_a_stratified_bootstrap():
    outcomes = {"t1": [1, 1, 1, 1], "t2": [1, 0, 1, 0], "t3": [0, 0, 0, 0], "t4": [1, 1, 1, 0], "t5": [0, 0, 0, 1]}
    iqm, low, high = scoring.iqm_interval(outcomes, reps=500)
    # task means 1, .5, 0, .75, .25 → trim 25 % (one task) at each end → mean(.25, .5, .75) = .5
    assert iqm == pytest.approx(0.5)
    assert 0.0 <= low < iqm < high <= 1.0
    assert scoring.iqm_interval(outcomes, reps=500) == (iqm, low, high)  # seeded: reproducible
    same = {"a": [1, 1], "b": [1, 1]}
    assert scoring.iqm_interval(same, reps=50) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        scoring.iqm_interval({"a": []})


def test_rollups_across_tasks_carry_the_iqm():
    rows = [_row("m", "b/t1", True, 1.0), _row("m", "b/t1", True, 1.0), _row("m", "b/t2", False, 0.0), _row("m", "b/t2", True, 1.0)]
    (by_model,) = scoring.group_scores(rows, "model")
    assert by_model["tasks"] == 2 and by_model["iqmSuccessRate"] == pytest.approx(0.75)
    (by_task, _) = scoring.group_scores(rows, "task")
    assert "iqmSuccessRate" not in by_task


def test_task_groups_keep_perturbation_levels_apart():
    from evaluations.domain.scoring import group_scores

    rows = [{"model": "m", "env": "e", "taskId": "t", "perturbation": p, "status": "completed", "success": ok, "reward": 1.0, "steps": 1}
            for p, ok in (("none", True), ("none", True), ("obs_noise:0.5", False), ("obs_noise:0.5", False))]
    groups = {g["key"]["perturbation"]: g["successRate"] for g in group_scores(rows, "task")}
    assert groups == {"none": 1.0, "obs_noise:0.5": 0.0}


def test_survived_with_a_horizon_needs_that_many_steps():
    from evaluations.domain.outcomes import episode_success

    crit = {"kind": "survived", "steps": 500}
    common = {"env_flag": None, "criterion": crit, "terminated": False, "reward": 1.0}
    assert episode_success(**common, stop_condition="time_limit", steps=500) == (True, "criterion")
    assert episode_success(**common, stop_condition="max_steps", steps=1) == (False, "criterion")
    assert episode_success(**common, stop_condition="max_steps", steps=None) == (True, "criterion")  # horizon unknown


def test_merged_cells_score_exactly_like_their_rows():
    import random

    rng = random.Random(7)
    rows = [_row("m", "b/t", rng.choice([True, False, None]), rng.choice([None, rng.gauss(500.0, 0.01)]),
                 status=rng.choice(["completed"] * 5 + ["error"]), steps=rng.randint(1, 500)) for _ in range(300)]
    whole = scoring.cell_of_rows(rows)
    parts = scoring.merge_cells([scoring.cell_of_rows(rows[i:i + 37]) for i in range(0, 300, 37)])
    for k in ("completed", "errors", "judged", "successes", "rewardN", "steps", "sources"):
        assert parts[k] == whole[k]
    # Chan's merge keeps the spread of rewards ~500 ± 0.01 (a naive sum of squares would lose it).
    assert parts["rewardMean"] == pytest.approx(whole["rewardMean"], rel=1e-12)
    assert parts["rewardM2"] == pytest.approx(whole["rewardM2"], rel=1e-6)
    from tests.api.test_score_cells import assert_close

    assert_close(scoring.summarize_cell(parts), scoring.summarize(rows))
