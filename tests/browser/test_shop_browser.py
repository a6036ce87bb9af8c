"""A real browser launches shop runs from the dashboard's agent form (the key typed into a password field), then
opens a rollout's transcript with its verifiers and the final state of the shop; all under the page's CSP."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser.conftest import shot
from tests.live.conftest import wait_for
from tests.support.agents import ReferenceAgent

pytestmark = [pytest.mark.live, pytest.mark.browser_env]
KEY = "sk-shop-browser-secret"


def _status(page, live, evaluation_id: str) -> dict:
    return page.request.get(f"{live.url}/agents/evaluations/{evaluation_id}",
                            headers={"Authorization": f"Bearer {live.api_key}"}).json()


def test_launch_an_open_run_from_the_form_and_read_its_verifiers(page, live, tmp_path):
    agent = ReferenceAgent(tmp_path / "reference-agent.log")
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(f"{live.url}/evaluations/agents/new")
        form = page.locator("#open-run-form")
        form.locator("[name=open-task_definition]").fill("Browse headphones and add any pair to cart.")
        form.locator("[name=open-profile_id]").select_option("U_002")
        form.locator("[name=open-max_steps]").fill("12")
        form.locator("[name=open-verifiers]").fill(json.dumps(
            [{"check": "cart_count", "where": {"category": "headphones"}, "op": "==", "value": 1}]))
        form.locator("[name=open-url]").fill(agent.url)
        form.locator("[name=open-key]").fill(KEY)
        assert form.locator("[name=open-key]").get_attribute("type") == "password"
        shot(page, "agent-launch-form")
        form.locator("#open-run-button").click()
        page.wait_for_url(re.compile(r".*/evaluations/eval_[0-9a-z]+$"))
        evaluation_id = page.url.rsplit("/", 1)[1]
        doc = wait_for(lambda: (d := _status(page, live, evaluation_id))["status"] == "COMPLETED" and d, timeout=240)
    finally:
        agent.stop()
    (result,) = doc["evaluations"][0]["results"]
    assert (result["task"], result["task_outcome"], result["stop_condition"]) == ("shop.open", "pass", "terminal_action")
    page.goto(f"{live.url}/evaluations/{evaluation_id}/episodes")
    assert "1/1 checks" in page.locator("#episodes-table").inner_text()
    page.locator("a.transcript-link").first.click()
    page.wait_for_url(re.compile(r".*/transcript$"))
    assert "passed" in page.locator("#verifiers").inner_text()
    assert "cart_count(category=headphones) == 1" in page.locator("#verifiers").inner_text()
    cart = page.locator("#final-cart").inner_text()
    assert "×1" in cart and "headphones" in cart and "U_002" in page.locator("#final-state").inner_text()
    assert KEY not in page.content() and not errors, errors
    shot(page, "shop-transcript")
