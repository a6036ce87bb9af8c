"""The dashboard in real headless Chromium against a live platform: launch, watch, tabs, copy, run again,
filter, revoke. Each test saves screenshots under screenshots/."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from tests.browser.conftest import shot

pytestmark = pytest.mark.live


def test_launch_watch_tabs_copy_and_run_again(page, live):
    page.goto(f"{live.url}/evaluations/new")
    page.select_option("#id_models", ["prebuilt/classic-control-heuristics", "prebuilt/random"])
    page.fill("#id_episodes", "3")
    page.fill("#id_name", "browser launch")
    page.fill("#id_tags", "via:browser")
    page.locator("#preview", has_text="2 workloads").wait_for()
    raw = page.input_value("#id_request_json")
    assert json.loads(raw)["tasks"][0]["episodes"] == 3 and json.loads(raw)["tags"] == {"via": "browser"}
    shot(page, "launch-form")
    page.click("#launch-button")
    page.wait_for_url(re.compile(r".*/evaluations/eval_[0-9a-f]+$"))
    eval_url = page.url
    page.locator("#progress [data-status=completed]").wait_for(timeout=180_000)
    page.locator("[data-plotly=chart-success] .main-svg").first.wait_for()
    assert page.locator("#scores-table tbody tr").count() == 2
    shot(page, "evaluation-overview")

    for tab in ("episodes", "configuration", "logs", "overview"):
        page.click(f"a[data-tab={tab}]")
        page.locator(f"[data-tab-content={tab}]").wait_for()
        assert page.url.endswith(f"/{tab}")
        page.locator(f"a[data-tab={tab}][aria-selected=true]").wait_for()  # the nav follows the swap
        shot(page, f"evaluation-{tab}")

    page.click("a[data-tab=configuration]")
    page.locator("[data-tab-content=configuration]").wait_for()
    page.click("#copy-request")
    page.locator("#copy-status", has_text="Copied").wait_for()
    copied = page.evaluate("navigator.clipboard.readText()")
    submitted = page.request.get(eval_url + "/request.json").body().decode()
    assert copied == submitted == raw

    page.click("#run-again")
    page.wait_for_url(re.compile(r".*/evaluations/new\?from=eval_"))
    assert page.input_value("#id_request_json") == raw
    assert page.input_value("#id_episodes") == "3"
    shot(page, "run-again-form")
    page.click("#launch-button")
    page.wait_for_url(re.compile(r".*/evaluations/eval_[0-9a-f]+$"))
    assert page.url != eval_url
    assert page.request.get(page.url + "/request.json").body().decode() == raw


def test_filter_the_list(page, live):
    for name in ("filter-alpha", "filter-beta"):
        body = {"name": name, "model": "prebuilt/random", "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 1}]}
        assert live.cli("eval", "submit", "-", stdin=json.dumps(body)).returncode == 0
    page.goto(f"{live.url}/evaluations")
    page.locator("#evaluations-table", has_text="filter-beta").wait_for()
    page.fill("input[name=q]", "filter-alpha")
    page.wait_for_url(re.compile(r".*q=filter-alpha"))
    page.locator("#evaluations-table tbody tr").first.wait_for()
    rows = page.locator("#evaluations-table tbody tr")
    assert rows.count() == 1 and "filter-alpha" in rows.first.inner_text()
    shot(page, "evaluations-filtered")
    page.goto(f"{live.url}/evaluations")
    shot(page, "evaluations-list")


def test_revoke_an_api_key(page, live):
    page.goto(f"{live.url}/settings")
    page.fill("#new-key-form input[name=name]", "browser key")
    page.click("#new-key-form button[type=submit]")
    key = page.locator("#new-key-value").inner_text().strip()
    req = urllib.request.Request(f"{live.url}/v1/evaluations", headers={"Authorization": f"Bearer {key}"})
    assert urllib.request.urlopen(req).status == 200
    row = page.locator("#keys-table tr", has_text="browser key")
    row.locator("button[data-revoke]").click()
    page.locator("#keys-table tr", has_text="browser key").locator("text=revoked").wait_for()
    shot(page, "settings-api-keys")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req)
    assert err.value.code == 401


def test_catalog_and_compare_pages(page, live):
    page.goto(f"{live.url}/images")
    page.locator("#images-table", has_text="prebuilt/classic-control").wait_for()
    shot(page, "catalog")
    page.goto(f"{live.url}/compare")
    boxes = page.locator("input[name=evaluations]")
    if boxes.count():
        boxes.first.check()
        page.click("#compare-form button")
        page.locator("#compare-table").wait_for()
    shot(page, "compare")


def test_a_recorded_failing_episode_plays_in_the_episodes_tab(page, live):
    body = {"name": "video check", "model": "prebuilt/random",
            "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 2, "record": "failures"}]}
    r = live.cli("eval", "submit", "-", "--wait", "--json", stdin=json.dumps(body))
    assert r.returncode == 0, r.stderr
    eval_id = json.JSONDecoder().raw_decode(r.stdout)[0]["id"]  # --wait prints the submit response, then the final one
    page.goto(f"{live.url}/evaluations/{eval_id}/episodes?show=videos")
    rows = page.locator("#episodes-table tbody tr")
    assert rows.count() == 2  # random CartPole fails every episode, so both were kept
    page.locator("details.video summary").first.click()
    video = page.locator("details.video video").first
    duration = video.evaluate(
        """v => new Promise((resolve, reject) => {
             if (v.readyState >= 1) return resolve(v.duration);
             v.addEventListener('loadedmetadata', () => resolve(v.duration));
             v.addEventListener('error', () => reject(new Error('video error ' + (v.error && v.error.code))));
           })"""
    )
    steps = int(rows.first.locator("td").nth(6).inner_text())
    assert duration == pytest.approx((steps + 1) / 50, abs=0.1)  # CartPole's render_fps: the env's real time
    video.evaluate("v => { v.muted = true; return v.play(); }")
    page.wait_for_function("v => v.currentTime > 0", arg=video.element_handle())
    shot(page, "episode-video")
