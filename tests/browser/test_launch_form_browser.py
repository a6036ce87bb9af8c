"""The launch form in real headless Chromium against a live platform: a multi-task MT10 evaluation with a perturbation
launched from the fields alone, the fields ↔ JSON sync, a seed beyond 2^53 through Run again, and Back through htmx's
history after its cache ran out. Screenshots land under screenshots/."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.support.live import wait_for

pytestmark = pytest.mark.live

BIG_SEED = 9007199254740993  # 2^53 + 1: the first integer a JavaScript number cannot hold


def submit_raw(live, raw: str) -> str:
    req = urllib.request.Request(f"{live.url}/v1/evaluations", data=raw.encode(), method="POST",
                                 headers={"Authorization": f"Bearer {live.api_key}", "Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=30))["id"]


def test_a_multi_task_mt10_evaluation_with_a_perturbation_from_the_form_alone(page, live):
    page.goto(f"{live.url}/evaluations/new")
    page.select_option("#id_models", ["prebuilt/metaworld-expert"])
    page.select_option("#id_env", "prebuilt/metaworld")
    picker = page.locator('[data-catalog-env="prebuilt/metaworld"]')
    expect(picker).to_be_visible()
    expect(page.locator('[data-catalog-env="prebuilt/classic-control"]')).to_be_hidden()
    picker.locator("[data-scenario-search]").fill("drawer")  # search narrows the list…
    expect(picker.locator(".scenario-list li:visible")).to_have_count(2 + 2 + 1 + 1)  # mt10 ×2, mt50 ×2, ml10 train/test
    picker.locator("[data-clear-scenarios]").click()
    picker.get_by_role("button", name="All of mt10 (10)").click()  # …and a whole benchmark is one click
    page.fill("#id_episodes", "1")
    page.fill("#id_seed", "7")
    page.select_option("#id_perturbation", "action_noise")
    page.fill("#id_strengths", "0.05")
    page.fill("#id_name", "mt10 under action noise, from the form")
    page.locator("#task-count", has_text="10 task ids = 10 tasks; × 1 model = 10 workloads").wait_for()
    page.locator("#preview", has_text="10 workloads").wait_for()
    request = json.loads(page.input_value("#id_request_json"))
    assert [t["taskId"] for t in request["tasks"]] == [
        "mt10/reach-v3", "mt10/push-v3", "mt10/pick-place-v3", "mt10/door-open-v3", "mt10/drawer-open-v3",
        "mt10/drawer-close-v3", "mt10/button-press-topdown-v3", "mt10/peg-insert-side-v3", "mt10/window-open-v3",
        "mt10/window-close-v3"]
    assert {(t["env"], t["episodes"], t["seed"], t["perturbation"]) for t in request["tasks"]} == {
        ("prebuilt/metaworld", 1, 7, "action_noise:0.05")}
    assert picker.locator("input[name=scenarios]:checked").count() == 10
    assert page.locator("#preview .warning", has_text="nothing defines success").count() == 0  # Meta-World's flag
    shot(page, "launch-form-mt10")
    page.click("#launch-button")
    page.wait_for_url(re.compile(r".*/evaluations/eval_[0-9a-f]+$"))
    page.locator("#progress [data-status=completed]").wait_for(timeout=420_000)
    eval_id = page.url.rsplit("/", 1)[1]
    scores = live.api(f"/v1/evaluations/{eval_id}/scores?groupBy=benchmark")["groups"]
    assert len(scores) == 1 and scores[0]["episodes"] == 10 and scores[0]["successRate"] is not None
    assert scores[0]["successSources"] == {"env": 10} and scores[0]["tasks"] == 10
    shot(page, "launch-form-mt10-result")


def test_fields_and_json_stay_in_sync_both_ways(page, live):
    page.goto(f"{live.url}/evaluations/new")
    page.click("[data-editor-tab=json]")
    body = {"name": "typed as JSON", "model": "prebuilt/random", "custom": {"kept": True},
            "tasks": [{"env": "prebuilt/classic-control", "taskId": t, "episodes": 2, "seed": 5, "perturbation": p,
                       "metadata": {"environmentId": f"x:{t}"}}
                      for t in ("classic/CartPole-v1", "classic/Acrobot-v1") for p in ("none", "obs_noise:0.1")]}
    page.fill("#id_request_json", json.dumps(body))
    page.click("[data-editor-tab=fields]")
    assert page.input_value("#id_name") == "typed as JSON"
    assert page.input_value("#id_task_ids") == "classic/CartPole-v1\nclassic/Acrobot-v1"
    assert (page.input_value("#id_perturbation"), page.input_value("#id_strengths")) == ("obs_noise", "none, 0.1")
    assert page.locator('[data-catalog-env="prebuilt/classic-control"] input[value="classic/Acrobot-v1"]').is_checked()
    page.fill("#id_episodes", "3")  # one field: the JSON follows, and keeps what the form has no field for
    edited = json.loads(page.input_value("#id_request_json"))
    assert edited["custom"] == {"kept": True} and edited["model"] == "prebuilt/random"
    assert [t["episodes"] for t in edited["tasks"]] == [3] * 4
    assert [t["metadata"]["environmentId"] for t in edited["tasks"]] == ["x:classic/CartPole-v1"] * 2 + ["x:classic/Acrobot-v1"] * 2
    # tasks on two envs cannot be shown by the fields: they lock and say why; the JSON stays editable
    edited["tasks"][0]["env"] = "prebuilt/mujoco"
    page.click("[data-editor-tab=json]")
    page.fill("#id_request_json", json.dumps(edited))
    page.click("[data-editor-tab=fields]")
    expect(page.locator("#fields-locked")).to_contain_text("the tasks differ in env")
    expect(page.locator("#id_episodes")).to_be_disabled()
    shot(page, "launch-form-locked")


def test_a_malformed_tag_or_env_var_is_named_and_the_json_waits(page, live):
    page.goto(f"{live.url}/evaluations/new")
    before = json.loads(page.input_value("#id_request_json"))
    page.fill("#id_tags", "team:robotics, badtag")
    expect(page.locator("#json-note")).to_contain_text('Tags must be key:value (not "badtag")')
    expect(page.locator("#id_tags")).to_have_attribute("aria-invalid", "true")
    assert "tags" not in json.loads(page.input_value("#id_request_json"))  # unchanged until fixed, nothing dropped
    page.fill("#id_env_vars", "A=1\nNOEQUALS")
    expect(page.locator("#json-note")).to_contain_text('envVars lines must be KEY=value (not "NOEQUALS")')
    page.fill("#id_tags", "team:robotics")
    page.fill("#id_env_vars", "A=1")
    expect(page.locator("#json-note")).to_have_text("")
    after = json.loads(page.input_value("#id_request_json"))
    assert after["tags"] == {"team": "robotics"} and after["models"][0]["envVars"] == {"A": "1"}
    assert after["tasks"] == before["tasks"]


def test_a_seed_beyond_2_53_survives_run_again(page, live):
    """Field case: submit "seed": 9007199254740993, open Run again, edit only the name: it became …992."""
    raw = ('{"name": "big seed", "model": "prebuilt/random", "tasks": [{"env": "prebuilt/classic-control", '
           f'"taskId": "classic/CartPole-v1", "episodes": 1, "seed": {BIG_SEED}}}]}}')
    eval_id = submit_raw(live, raw)
    page.goto(f"{live.url}/evaluations/{eval_id}/configuration")
    page.click("#run-again")
    page.wait_for_url(re.compile(r".*/evaluations/new\?from=eval_"))
    assert page.input_value("#id_seed") == str(BIG_SEED)  # the field shows it exactly
    page.fill("#id_name", "big seed, again")
    text = page.input_value("#id_request_json")
    assert f'"seed": {BIG_SEED}' in text and json.loads(text)["name"] == "big seed, again"
    page.fill("#id_seed", str(BIG_SEED + 2))  # and an edit of the seed itself is exact too
    assert f'"seed": {BIG_SEED + 2}' in page.input_value("#id_request_json")
    page.fill("#id_seed", str(BIG_SEED))
    page.locator("#preview", has_text=f"{BIG_SEED}–{BIG_SEED}").wait_for()
    page.click("#launch-button")
    page.wait_for_url(re.compile(r".*/evaluations/eval_[0-9a-f]+$"))
    again = page.request.get(page.url + "/request.json").body().decode()
    assert f'"seed": {BIG_SEED}' in again and json.loads(again)["tasks"][0]["seed"] == BIG_SEED
    detail = live.api(f"/v1/evaluations/{page.url.rsplit('/', 1)[1]}")
    assert detail["config"]["tasks"][0]["seed"] == BIG_SEED
    shot(page, "run-again-big-seed")


def test_back_ten_times_after_twelve_tab_clicks_keeps_the_full_page(page, live):
    """Field case: after a dozen tab clicks and as many Backs, htmx's history cache (10 entries) misses and the
    restore request got a bare fragment: no header, no tabs."""
    eval_id = submit_raw(live, json.dumps({"model": "prebuilt/random", "tasks": [
        {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 1}]}))
    wait_for(lambda: live.api(f"/v1/evaluations/{eval_id}")["status"] == "completed", timeout=120)
    page.goto(f"{live.url}/evaluations/{eval_id}")
    tabs = ["episodes", "configuration", "logs", "overview"] * 3
    for tab in tabs:
        page.click(f"a[data-tab={tab}]")
        page.locator(f"#tab-body [data-tab-content={tab}]").wait_for()
        page.wait_for_url(re.compile(f".*/{tab}$"))
    visited = [f"/evaluations/{eval_id}"] + [f"/evaluations/{eval_id}/{t}" for t in tabs]
    # The cache holds 10 snapshots in sessionStorage and misses when they are evicted or over the quota (a page of
    # charts): empty it before every Back, so each one is a restore request answered by the server.
    page.evaluate("window.__misses = 0; document.addEventListener('htmx:historyCacheMissLoad', () => window.__misses++)")
    for back in range(1, 11):
        page.evaluate("sessionStorage.removeItem('htmx-history-cache')")
        page.go_back()
        expected = visited[-1 - back]
        page.wait_for_url(re.compile(re.escape(expected) + "$"))
        tab = expected.rsplit("/", 1)[1] if expected.count("/") == 3 else "overview"
        page.locator(f"#tab-body [data-tab-content={tab}]").wait_for()
        assert page.locator("header.topbar").count() == 1, f"no header after Back #{back} ({expected})"
        assert page.locator("nav.tabs a[data-tab]").count() == 4, f"no tabs after Back #{back}"
        assert page.locator("#progress").count() == 1 and page.locator("#tab-body").count() == 1
        assert page.evaluate("window.__misses") == back  # each Back was answered by a history-restore request
    shot(page, "history-back-ten")


def test_the_page_json_codec_round_trips_what_javascript_numbers_cannot(page, live):
    page.goto(f"{live.url}/evaluations/new")
    samples = ['{"seed": 9007199254740993, "x": -0.0, "y": 1e400, "z": 0.1000000000000000055511151231257827}',
               '{"2": "integer-like keys keep their place", "a": [1, {"1": null}], "é\\u0000": "😀 \\"q\\""}',
               '[]', '{}', '"text"', 'true', '123456789012345678901234567890']
    for raw in samples:
        out = page.evaluate("raw => rlmeshLosslessJSON.stringify(rlmeshLosslessJSON.parse(raw), '')", raw)
        # numbers and key order come back as written (string escapes may be normalized: same value)
        assert json.loads(out) == json.loads(raw) and out.replace(" ", "") == raw.replace(" ", ""), (raw, out)
    for bad in ['{"a": 1,}', "{'a': 1}", '[1 2]', "NaN", '{"a": 01}']:
        assert page.evaluate("raw => { try { rlmeshLosslessJSON.parse(raw); return 'parsed'; } catch (e) { return e.name; } }", bad) == "SyntaxError", bad
