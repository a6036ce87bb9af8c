"""Reproduction verdicts (domain.reproduction): our Wilson interval against a published success rate."""

from __future__ import annotations

import pytest

from evaluations.domain.reproduction import reproduction_verdict
from evaluations.domain.sample_sizes import episodes_for_half_width, success_interval_half_width


def test_the_libero_protocol_decides_a_reproduction():
    v = reproduction_verdict(0.90, 452, 500)  # SmolVLA's spatial 90 %, 500 episodes at 90.4 %
    assert v["verdict"] == "reproduced" and v["interval"][0] < 0.90 < v["interval"][1] and v["halfWidth"] < 0.05
    assert v["episodesToDecide"] is None and v["moreEpisodes"] is None


def test_outside_the_interval_is_decided_at_any_size():
    assert reproduction_verdict(0.96, 3, 10)["verdict"] == "below"   # [0.11, 0.60]
    assert reproduction_verdict(0.418, 10, 10)["verdict"] == "above"  # [0.72, 1.0]
    assert reproduction_verdict(0.988, 418, 500)["verdict"] == "below"  # LeRobot #952: π0 at 41.8 %… or 83.6 %


def test_inside_a_wide_interval_is_undecided_with_the_episodes_that_would_decide():
    v = reproduction_verdict(0.92, 9, 10)
    assert v["verdict"] == "undecided" and v["interval"][0] < 0.92 < v["interval"][1]
    needed = episodes_for_half_width(0.05, 0.92)
    assert v["episodesToDecide"] == needed and v["moreEpisodes"] == needed - 10
    assert success_interval_half_width(needed, 0.92) <= 0.05 < success_interval_half_width(needed - 1, 0.92)


def test_a_tighter_tolerance_asks_for_more():
    loose, tight = reproduction_verdict(0.9, 90, 100), reproduction_verdict(0.9, 90, 100, tolerance=0.02)
    assert loose["verdict"] == "undecided" and tight["verdict"] == "undecided"
    assert tight["episodesToDecide"] > loose["episodesToDecide"] > 100


@pytest.mark.parametrize(("args", "message"), [
    ((0.9, 0, 0), "judged must be at least 1"), ((0.9, 11, 10), "successes must lie in"),
    ((90, 5, 10), "published must be a fraction"), ((-0.1, 5, 10), "published must be a fraction"),
])
def test_bad_inputs_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        reproduction_verdict(*args)
