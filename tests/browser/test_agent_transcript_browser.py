"""A real browser opens an agent rollout's transcript: a run of the reference agent (with screenshots) through the
live platform, then the run's page, its Episodes tab and one rollout's transcript step by step."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from tests.browser.conftest import shot
from tests.live.conftest import wait_for
from tests.support.agents import ReferenceAgent

pytestmark = [pytest.mark.live, pytest.mark.browser_env]


def _call(live, method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(f"{live.url}/agents{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {live.api_key}", "Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=30))


def test_open_a_rollouts_transcript(page, live, tmp_path):
    agent = ReferenceAgent(tmp_path / "reference-agent.log")
    try:
        run = _call(live, "POST", "/evaluations/run", {
            "env_id": "miniwob", "model": "browser-agent", "task_ids": ["miniwob.login-user"],
            "endpoint": {"url": agent.url, "key": "sk-browser-secret", "minimal_observation": False}})
        doc = wait_for(lambda: (d := _call(live, "GET", run["status_url"]))["status"] == "COMPLETED" and d, timeout=180)
    finally:
        agent.stop()
    public_id = doc["evaluation_id"]
    page.goto(f"{live.url}/evaluations/{public_id}")
    page.locator("#agent-summary").wait_for()
    page.click("a[data-tab=episodes]")
    page.locator("a.transcript-link").first.click()
    page.wait_for_url(re.compile(rf".*/evaluations/{public_id}/episodes/\d+/transcript$"))
    steps = page.locator("#transcript-steps li.step")
    assert steps.count() == doc["evaluations"][0]["results"][0]["steps"] + 1
    first = page.locator("#step-1")
    assert "type_text" in first.locator(".tool-name").inner_text() or "click" in first.locator(".tool-name").inner_text()
    assert page.locator("img.screenshot").first.evaluate("img => img.complete && img.naturalWidth") == 160
    page.locator("#step-1 details summary").first.click()
    assert "Bearer ***" in page.locator("#step-1").inner_text()
    assert "GOAL:" in page.locator("#step-0 .observation-text").inner_text()
    assert "sk-browser-secret" not in page.content()
    shot(page, "agent-transcript")
