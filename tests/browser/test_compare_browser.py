"""Compare and regression verdicts in real Chromium against a live platform: two evaluations of the same seeds run
by the worker, the forest plot drawn by Plotly with its interval error bars, and the regression badge in the list
once the first is the baseline."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.browser.conftest import shot

pytestmark = pytest.mark.live


def submit(live, model: str, name: str) -> str:
    body = {"name": name, "model": model, "tags": {"suite": "browser-nightly"},
            "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 12, "seed": 0},
                      {"env": "prebuilt/classic-control", "taskId": "classic/MountainCar-v0", "episodes": 6, "seed": 0}]}
    r = live.cli("eval", "submit", "-", "--wait", stdin=json.dumps(body))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.split("Submitted ")[1].split()[0]


def test_the_forest_plot_renders_on_compare_and_the_list_shows_the_regression(page, live):
    baseline = submit(live, "prebuilt/classic-control-heuristics", "browser baseline")
    candidate = submit(live, "prebuilt/random", "browser candidate")

    page.goto(f"{live.url}/compare")
    page.select_option("#side-a", f"{baseline}:prebuilt/classic-control-heuristics")
    page.select_option("#side-b", f"{candidate}:prebuilt/random")
    page.click("#compare-sides")
    plot = page.locator("#forest-plot.js-plotly-plot")
    plot.wait_for()
    # Plotly draws one horizontal error bar per row (two tasks and the overall row) around a dashed zero line.
    page.locator("#forest-plot g.errorbar path.xerror").first.wait_for()
    assert page.locator("#forest-plot g.errorbar path.xerror").count() == 3
    assert page.locator("#forest-plot .shapelayer path").count() >= 1
    assert page.locator("#paired-table [data-verdict=worse]").count() >= 1  # CartPole: 1.0 → ~0.0
    shot(page, "compare-paired")

    req = urllib.request.Request(f"{live.url}/v1/baselines/suite:browser-nightly", method="PUT",
                                 data=json.dumps({"evaluation": baseline}).encode(),
                                 headers={"Authorization": f"Bearer {live.api_key}", "Content-Type": "application/json"})
    assert urllib.request.urlopen(req, timeout=30).status == 201
    page.goto(f"{live.url}/evaluations?tag=suite:browser-nightly")
    page.locator(f"tr[data-id={candidate}] [data-regression=regressed]").wait_for()
    page.locator(f"tr[data-id={baseline}] [data-baseline='suite:browser-nightly']").wait_for()
    shot(page, "evaluations-regression-badges")
    page.goto(f"{live.url}/evaluations/{candidate}")
    page.locator("#regression .regression-verdict .regression-regressed", has_text="regressed on 2 tasks").wait_for()
    shot(page, "evaluation-regression")
