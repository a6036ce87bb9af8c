"""Meta-World acceptance through the official CLI against a live platform (web + Celery worker + real servers
in the separate Meta-World venv): MT10 expert vs random, and an observation-noise sweep."""

from __future__ import annotations

import pytest

from tests.live.conftest import ROOT

pytestmark = [pytest.mark.live, pytest.mark.slow]

MT10 = ROOT / "examples" / "metaworld-mt10.json"
SWEEP = ROOT / "examples" / "metaworld-noise-sweep.json"


@pytest.fixture(autouse=True)
def _needs_metaworld():
    if not (ROOT / ".venv-metaworld" / "bin" / "python").exists():
        pytest.fail("the Meta-World venv is missing: run scripts/setup-metaworld.sh (make test does)")


def _submit(live, path) -> str:
    r = live.cli("eval", "submit", str(path), "--wait", timeout=1500)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.split("Submitted ")[1].split()[0]


def test_mt10_expert_beats_random_on_every_task(live):
    eval_id = _submit(live, MT10)
    evaluation = live.api(f"/v1/evaluations/{eval_id}")
    assert evaluation["status"] == "completed" and evaluation["progress"]["completedEpisodes"] == 200
    by_task = live.api(f"/v1/evaluations/{eval_id}/scores?groupBy=scenario")["groups"]
    expert = {g["key"]["scenario"]: g for g in by_task if g["key"]["model"] == "prebuilt/metaworld-expert"}
    assert len(expert) == 10
    for scenario, g in expert.items():
        assert g["episodes"] == 10 and g["successRate"] >= 0.9, (scenario, g["successRate"])
        low, high = g["successRateCi"]
        assert 0 <= low <= g["successRate"] <= high <= 1
        assert g["successSources"] == {"env": 10}
    bench = {g["key"]["model"]: g for g in live.api(f"/v1/evaluations/{eval_id}/scores?groupBy=benchmark")["groups"]}
    assert {g["key"]["benchmark"] for g in bench.values()} == {"mt10"}
    assert bench["prebuilt/random"]["successRate"] <= 0.1
    assert bench["prebuilt/metaworld-expert"]["successRate"] >= 0.9 and bench["prebuilt/metaworld-expert"]["tasks"] == 10
    assert bench["prebuilt/metaworld-expert"]["iqmSuccessRateCi"][0] > bench["prebuilt/random"]["iqmSuccessRateCi"][1]


def test_observation_noise_sweep_lowers_success(live):
    eval_id = _submit(live, SWEEP)
    groups = {g["key"]["perturbation"]: g for g in live.api(f"/v1/evaluations/{eval_id}/scores?groupBy=perturbation")["groups"]}
    rates = [groups[p]["successRate"] for p in ("none", "obs_noise:0.05", "obs_noise:0.1")]
    assert rates[0] > rates[1] > rates[2], rates
    episodes = live.api(f"/v1/evaluations/{eval_id}/episodes?limit=1000")["items"]
    assert {e["perturbation"]["label"] for e in episodes if e["perturbation"]} == {"obs_noise:0.05", "obs_noise:0.1"}
    assert all(e["video"] is None for e in episodes)  # nothing asked for recording, nothing rendered
