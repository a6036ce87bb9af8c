"""The MiniWoB env in real Chromium, in-process: observation, actions, errors, terminal actions, seeds, render."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import rlmesh

from evaluations.prebuilt.miniwob import SCENARIOS, TASKS, VARIANTS, MiniWoB

from .conftest import ROOT, child_env

pytestmark = [pytest.mark.browser_env, pytest.mark.usefixtures("chromium")]


@pytest.fixture(scope="module")
def env():
    e = MiniWoB().make(task="login-user")
    yield e
    e.close()


def call(tool: str, **arguments) -> str:
    return json.dumps({"tool": tool, "arguments": arguments, "trace": {"ignored": True}})


def ref_of(dom: str, needle: str) -> int:
    line = next(line for line in dom.splitlines() if needle in line)
    return int(line.strip().split("]")[0][1:])


def test_the_catalog_needs_no_browser():
    import gymnasium
    import miniwob  # noqa: F401 - registers the miniwob/<task>-v1 ids

    assert [t for t in TASKS if f"miniwob/{t}-v1" not in gymnasium.registry] == []
    assert VARIANTS["miniwob.login-user"] == {"task": "login-user"}
    assert SCENARIOS["miniwob.login-user"] == {"task": "login-user", "description": TASKS["login-user"].description,
                                               "example_goal": TASKS["login-user"].example_goal, "max_steps": 8,
                                               "tools": list(TASKS["login-user"].tools)}
    assert TASKS["click-test"].tools == ("click", "wait", "finish") and TASKS["login-user"].max_steps == 8
    catalog = {v.id: v for v in MiniWoB.enumerate_variants()}
    assert catalog["miniwob.login-user"].metadata["tools"] == list(TASKS["login-user"].tools)
    spaces = rlmesh.describe(MiniWoB)["env_spec"]["observation_space"]["details"]["spaces"]
    assert sorted(spaces) == ["dom", "error", "goal", "meta", "raw"]


def test_reset_observes_goal_dom_meta_and_raw(env):
    obs, info = env.reset(seed=5)
    assert set(obs) == {"goal", "dom", "error", "meta", "raw"} and obs["error"] == ""
    assert obs["goal"].startswith("Enter the username ")
    meta = json.loads(obs["meta"])
    assert meta["step"] == 0 and meta["task"] == "miniwob.login-user" and len(meta["episode"]) == 36
    assert meta["tools"] == ["click", "type_text", "press_key", "wait", "finish"]
    raw = json.loads(obs["raw"])
    assert raw["utterance"] == obs["goal"] and {"ref", "parent", "tag", "value", "left"} <= set(raw["dom_elements"][0])
    assert "input_text id=username" in obs["dom"] and "button id=subbtn" in obs["dom"]
    assert info["raw_reward"] == 0.0 and info["is_success"] is False and not info["page_ended"]


@pytest.mark.parametrize(("action", "message"), [
    ("not json at all", "ERROR: action is not JSON"),
    (call("scroll", dy=3), "ERROR: unknown tool 'scroll'"),
    (call("click"), "ERROR: click: missing argument 'ref'"),
    (call("click", ref=4242), "ERROR: no element with ref 4242 on the page"),
    (json.dumps({"tool": None, "error": "the reply had no tool call"}), "ERROR: the reply had no tool call"),
    (call("press_key", key="<NoSuchKey>"), "ERROR: press_key: unknown key '<NoSuchKey>'"),
])
def test_invalid_actions_are_fed_back_not_raised(env, action, message):
    obs, _ = env.reset(seed=1)
    episode = json.loads(obs["meta"])["episode"]
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs["error"].startswith(message) and info["error"] == obs["error"]
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert json.loads(obs["meta"]) == {**json.loads(obs["meta"]), "episode": episode, "step": 1}
    obs, *_ = env.step(call("wait", ms=1))
    assert obs["error"] == ""


def test_tools_act_on_the_page_and_the_page_ends_the_episode(env):
    obs, _ = env.reset(seed=2)
    goal = obs["goal"]
    user, password = goal.split('"')[1], goal.split('"')[3]
    obs, *_ = env.step(call("type_text", ref=ref_of(obs["dom"], "id=username"), text=user[:-1]))
    obs, *_ = env.step(call("press_key", key=user[-1]))
    assert f"value='{user}' focused" in obs["dom"]
    obs, *_ = env.step(call("type_text", ref=ref_of(obs["dom"], "id=password"), text=password))
    obs, reward, terminated, truncated, info = env.step(call("click", ref=ref_of(obs["dom"], "button")))
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["page_ended"] and info["is_success"] and info["raw_reward"] == 1.0 and not info["terminal_action"]
    assert info["tool_result"].endswith("the page ended the episode (raw reward 1)")


def test_a_wrong_submission_scores_zero_and_finish_is_terminal(env):
    obs, _ = env.reset(seed=3)
    obs, reward, terminated, _, info = env.step(call("click", ref=ref_of(obs["dom"], "button")))
    assert terminated and info["page_ended"] and info["raw_reward"] == -1.0 and reward == 0.0
    assert not info["is_success"]
    env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step(call("finish", reason="gave up"))
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["terminal_action"] and not info["page_ended"] and not info["is_success"]


def test_an_endpoint_error_truncates(env):
    env.reset(seed=4)
    obs, reward, terminated, truncated, info = env.step(
        json.dumps({"tool": "__endpoint_error__", "arguments": {"message": "endpoint unavailable: HTTP 503"}}))
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["endpoint_error"] == "endpoint unavailable: HTTP 503" and obs["goal"]


def test_render_and_screenshot_observations():
    env = MiniWoB().make(task="click-test", screenshot=True)
    try:
        assert env.render().shape == (210, 160, 3)  # before the browser starts: black
        obs, _ = env.reset(seed=0)
        assert obs["screenshot"].shape == (210, 160, 3) and obs["screenshot"].dtype == np.uint8
        assert obs["screenshot"].std() > 0 and env.render().std() > 0
    finally:
        env.close()


def test_the_page_timer_is_lifted(env):
    env.reset(seed=0)
    assert env._browser.instance.driver.execute_script("return core.EPISODE_MAX_TIME;") == 3_600_000


def test_the_page_timer_still_ends_the_episode_when_kept_short():
    env = MiniWoB().make(task="click-test", page_timer_ms=300)
    try:
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(call("wait", ms=600))
        assert terminated and not truncated and reward == 0.0
        assert info["page_ended"] and info["timed_out"] and info["raw_reward"] == -1.0 and not info["is_success"]
    finally:
        env.close()


def test_seeds_reproduce_goals_across_processes(env):
    seeds = [0, 1, 7]
    here = [env.reset(seed=s)[0]["goal"] for s in seeds]
    code = ("import json, sys; from evaluations.prebuilt.miniwob import MiniWoB; e = MiniWoB().make(task='login-user');"
            f"print(json.dumps([e.reset(seed=s)[0]['goal'] for s in {seeds}])); e.close()")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == here
    assert len(set(here)) == 3
