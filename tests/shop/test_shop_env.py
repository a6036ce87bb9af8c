"""The shop env in real Chromium, in-process: MiniWoB's observation contract, every task family passed by a scripted
agent and failed by a wrong action (through the verifiers), the two stop conditions, open tasks, invalid calls."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluations.agents.reference_agent import decide, parse_dom
from evaluations.prebuilt.shop import Shop
from evaluations.prebuilt.shop.tasks import catalog, open_task

pytestmark = [pytest.mark.browser_env, pytest.mark.usefixtures("chromium")]

TASKS = catalog(0)


@pytest.fixture(scope="module")
def env():
    e = Shop().make(task="shop.search.t001")
    yield e
    e.close()


def call(tool: str, **arguments) -> str:
    return json.dumps({"tool": tool, "arguments": arguments})


def ref_of(dom: str, needle: str) -> int:
    line = next(line for line in dom.splitlines() if needle in line)
    return int(line.strip().split("]")[0][1:])


def run(env, task, policy=None, *, max_steps: int | None = None):
    """Roll ``task`` out with ``policy(goal, dom)`` (default: the reference agent); returns (steps, last step)."""
    env.configure(task, max_steps=max_steps)
    obs, _ = env.reset(seed=0)
    steps = 0
    while True:
        action = (policy or decide)(obs["goal"], obs["dom"]) or decide(obs["goal"], obs["dom"])
        obs, reward, terminated, truncated, info = env.step(json.dumps(action))
        steps += 1
        if terminated or truncated:
            return steps, (obs, reward, terminated, truncated, info)


def page_kind(dom: str) -> str:
    main = next((e for e in parse_dom(dom) if e.tag == "main"), None)
    return main.id[5:] if main else ""


def click_ref(ref: int) -> dict:
    return {"tool": "click", "arguments": {"ref": ref}}


# A wrong action per family: None defers to the reference agent, so each rollout goes wrong at one point.
def open_a_featured_product(goal, dom):
    kind = page_kind(dom)
    if kind == "home":
        return click_ref(ref_of(dom, "class='product-link'"))
    return {"tool": "finish", "arguments": {"reason": "done"}} if kind == "product" else None


def remove_the_wrong_line(goal, dom):
    if page_kind(dom) == "cart" and "remove-0" in dom and "remove-2" in dom:
        wanted = goal.removeprefix("Remove the ").removesuffix(" from your cart.")
        lines = [line for line in dom.splitlines() if "class='product-link'" in line]
        wrong = next(i for i, line in enumerate(lines) if wanted not in line)
        return click_ref(ref_of(dom, f"id=remove-{wrong}"))
    return None


def place_without_choosing_delivery(goal, dom):
    return click_ref(ref_of(dom, "id=place-order")) if page_kind(dom) == "checkout" else None


def tick_without_saving(goal, dom):
    if page_kind(dom) == "account":
        box = next(line for line in dom.splitlines() if "id=newsletter" in line)
        return click_ref(ref_of(dom, "id=newsletter")) if "checked" not in box else {"tool": "finish", "arguments": {}}
    return None


def add_to_cart_instead(goal, dom):
    return click_ref(ref_of(dom, "id=add-to-cart")) if page_kind(dom) == "product" else (
        {"tool": "finish", "arguments": {}} if page_kind(dom) == "cart" else None)


FAMILIES = [("search", "shop.search.t001", "shop.search.t009", open_a_featured_product),
            ("cart", "shop.cart.t013", "shop.cart.t017", remove_the_wrong_line),
            ("checkout", "shop.checkout.t009", "shop.checkout.t001", place_without_choosing_delivery),
            ("account", "shop.account.t019", "shop.account.t001", tick_without_saving),
            ("wishlist", "shop.wishlist.t015", "shop.wishlist.t001", add_to_cart_instead)]


def test_the_observation_is_the_miniwob_contract(env):
    env.configure(TASKS["shop.cart.t001"])
    obs, info = env.reset(seed=3)
    assert set(obs) == {"goal", "dom", "error", "meta", "raw"} and obs["error"] == ""
    assert obs["goal"] == TASKS["shop.cart.t001"].goal
    meta = json.loads(obs["meta"])
    assert meta["task"] == "shop.cart.t001" and meta["step"] == 0 and len(meta["episode"]) == 36
    assert meta["tools"] == ["click", "type_text", "press_key", "wait", "finish"]
    raw = json.loads(obs["raw"])
    assert raw["utterance"] == obs["goal"] and raw["fields"] == []
    assert {"ref", "parent", "tag", "text", "value", "id", "classes", "left", "focused"} <= set(raw["dom_elements"][0])
    assert "main id=page-home" in obs["dom"] and "input_text id=search-box" in obs["dom"]
    assert info["page"] == "home" and info["verdict"] == "state" and info["is_success"] is False
    assert [v["passed"] for v in info["verifiers"]] == [False, False] and "shop_state" not in info


@pytest.mark.parametrize(("family", "passing", "failing", "wrong"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_every_family_has_a_task_passed_and_one_failed_through_its_verifiers(env, family, passing, failing, wrong):
    steps, (obs, reward, terminated, truncated, info) = run(env, TASKS[passing])
    assert terminated and not truncated and info["terminal_action"], obs["error"]
    assert info["is_success"] is True and reward == 1.0 and all(v["passed"] for v in info["verifiers"])
    assert steps <= TASKS[passing].max_steps
    _, (obs, reward, terminated, _, info) = run(env, TASKS[failing], wrong)
    assert terminated and info["is_success"] is False and reward < 1.0
    failed = [v for v in info["verifiers"] if not v["passed"]]
    assert failed and all(v["detail"] and v["kind"] == "state" for v in failed)
    assert reward == pytest.approx(1 - len(failed) / len(info["verifiers"]))


def test_finish_at_once_ends_the_episode_with_the_verifiers_failing(env):
    env.configure(TASKS["shop.checkout.t001"])
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(call("finish", reason="nothing to do"))
    assert (reward, terminated, truncated) == (0.0, True, False) and info["terminal_action"]
    assert info["is_success"] is False and not any(v["passed"] for v in info["verifiers"])
    assert info["shop_state"]["cart"] == [] and info["shop_state"]["page"]["kind"] == "home"
    assert info["tool_result"] == "finished: nothing to do"


def test_an_agent_that_never_finishes_is_truncated_after_exactly_max_steps(env):
    env.configure(TASKS["shop.cart.t001"], max_steps=4)
    env.reset(seed=0)
    for step in range(1, 5):
        obs, reward, terminated, truncated, info = env.step(call("wait", ms=1))
        assert json.loads(obs["meta"])["step"] == step and not terminated
        assert truncated == (step == 4) and info["max_steps_reached"] == (step == 4)
    assert "shop_state" in info and info["is_success"] is False and reward == 0.0


def test_open_tasks_are_unverified_without_checks_and_judged_with_them(env):
    env.configure(open_task("Browse headphones and add any pair to cart.", profile_id="U_007", verifiers=None,
                            max_steps=5))
    obs, info = env.reset(seed=0)
    assert obs["goal"] == "Browse headphones and add any pair to cart." and "(U_007)" in obs["dom"]
    obs, reward, terminated, _, info = env.step(call("click", ref=ref_of(obs["dom"], "'Headphones'")))
    assert info["page"] == "category" and info["verdict"] == "unverified" and info["is_success"] is None
    obs, reward, terminated, _, info = env.step(call("finish"))
    assert terminated and info["is_success"] is None and info["verifiers"] == [] and reward == 0.0
    assert info["shop_state"]["visited"][-1]["category"] == "headphones"
    checks = [{"check": "cart_count", "where": {"category": "headphones"}, "op": "==", "value": 1}]
    env.configure(open_task("Browse headphones and add any pair to cart.", profile_id="U_007", verifiers=checks,
                            max_steps=8))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(call("click", ref=ref_of(obs["dom"], "'Headphones'")))
    obs, *_ = env.step(call("click", ref=ref_of(obs["dom"], "class='product-link'")))
    obs, *_ = env.step(call("click", ref=ref_of(obs["dom"], "id=add-to-cart")))
    obs, reward, terminated, _, info = env.step(call("finish"))
    assert info["is_success"] is True and reward == 1.0 and info["verifiers"][0]["detail"].startswith("1 cart items")


@pytest.mark.parametrize(("action", "message"), [
    ("not json", "ERROR: action is not JSON"),
    (call("scroll", dy=3), "ERROR: unknown tool 'scroll'"),
    (call("click", ref=4242), "ERROR: no element with ref 4242 on the page"),
    (call("press_key", key="<NoSuchKey>"), "ERROR: press_key: unknown key '<NoSuchKey>'"),
])
def test_invalid_calls_are_fed_back_not_raised(env, action, message):
    env.configure(TASKS["shop.cart.t001"])
    env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs["error"].startswith(message) and info["error"] == obs["error"]
    assert (reward, terminated, truncated) == (0.0, False, False)


def test_typing_and_enter_submit_a_search_and_form_values_are_state(env):
    env.configure(open_task("Find earbuds.", profile_id="U_001", verifiers=[
        {"check": "visited", "is": "search", "where": {"query": "earbuds"}},
        {"check": "form_value", "field": "q", "value": "earbuds"}], max_steps=5))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(call("type_text", ref=ref_of(obs["dom"], "id=search-box"), text="earbuds"))
    assert "value='earbuds' focused" in obs["dom"]
    obs, _, _, _, info = env.step(call("press_key", key="<Enter>"))
    assert info["page"] == "search" and "Results for \"earbuds\"" in obs["dom"]
    assert [v["passed"] for v in info["verifiers"]] == [True, True]


def test_a_typed_value_longer_than_what_is_shown_says_it_was_cut(env):
    env.configure(open_task("Find earbuds.", profile_id="U_001", verifiers=[], max_steps=5))
    obs, _ = env.reset(seed=0)
    text = "earbuds " * 37 + "wired"  # 301 characters: the page keeps them all, the observation shows 256
    obs, *_ = env.step(call("type_text", ref=ref_of(obs["dom"], "id=search-box"), text=text))
    line = next(line for line in obs["dom"].splitlines() if "id=search-box" in line)
    assert f"value='{text[:256]}' (value cut: 256 of 301 chars shown) focused" in line
    (raw,) = [e for e in json.loads(obs["raw"])["dom_elements"] if e["id"] == "search-box"]
    assert (raw["value"], raw["value_chars"]) == (text[:256], 301)
    assert env.state_summary()["form"]["q"] == text


def test_screenshots_and_render():
    env = Shop().make(task="shop.cart.t001", screenshot=True)
    try:
        assert env.render().shape == (300, 400, 3)
        obs, _ = env.reset(seed=0)
        assert obs["screenshot"].shape == (300, 400, 3) and obs["screenshot"].dtype == np.uint8
        assert obs["screenshot"].std() > 0
    finally:
        env.close()


def test_the_reference_agent_passes_the_seeds_open_run_example(env):
    checks = [{"check": "cart_count", "where": {"category": "headphones"}, "op": "==", "value": 1},
              {"check": "visited", "is": "category", "where": {"category": "headphones"}}]
    task = open_task("Browse headphones and add any pair to cart.", profile_id="U_001", verifiers=checks, max_steps=20)
    steps, (obs, reward, terminated, truncated, info) = run(env, task)
    assert terminated and info["is_success"] and reward == 1.0 and steps <= 6
