"""The dashboard at a laptop's 1280 px and a phone's 390 px, and the manual, in real Chromium: ids stay one short
line, chart titles are not cut, no page is wider than the screen (wide tables scroll in their own box), and the
manual's navigation leads to the API reference. Screenshots of each width land in screenshots/."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser.conftest import shot

pytestmark = pytest.mark.live

WIDTHS = (1280, 390)


@pytest.fixture(scope="module")
def three_task_evaluation(live) -> str:
    """Three tasks and two models: the Overview draws the performance profile and both charts."""
    body = {"name": "widths: three classic tasks", "models": [{"model": "prebuilt/random"},
                                                             {"model": "prebuilt/classic-control-heuristics"}],
            "tasks": [{"env": "prebuilt/classic-control", "taskId": task, "episodes": 4, "seed": 0, "maxSteps": 200}
                      for task in ("classic/CartPole-v1", "classic/MountainCar-v0", "classic/Acrobot-v1")]}
    r = live.cli("eval", "submit", "-", "--wait", stdin=json.dumps(body))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.split("Submitted ")[1].split()[0]


def _no_page_overflow(page) -> None:
    """Nothing makes the page itself scroll sideways (a wide table scrolls inside its .table-scroll box)."""
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the page is {overflow} px wider than the {page.viewport_size['width']} px screen"


def _chart_titles_fit(page) -> int:
    """Every Plotly title lies inside its chart's drawing; returns how many charts were checked."""
    charts = page.locator(".js-plotly-plot")
    for i in range(charts.count()):
        chart = charts.nth(i)
        box = chart.bounding_box()
        title = chart.locator(".gtitle")
        if title.count():
            t = title.first.bounding_box()
            assert t["x"] >= box["x"] - 1 and t["x"] + t["width"] <= box["x"] + box["width"] + 1, \
                f"chart {i}'s title is cut: {t} outside {box}"
    return charts.count()


@pytest.mark.parametrize("width", WIDTHS)
def test_list_and_overview_fit_the_screen(page, live, three_task_evaluation, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live.url}/evaluations")
    cell = page.locator(f"tr[data-id={three_task_evaluation}] .eval-id")
    cell.wait_for()
    # The id is shown short, on one line, in monospace; the whole id is its title and what Copy puts on the clipboard.
    code = cell.locator("code")
    shown = code.inner_text()
    assert shown.endswith("…") and three_task_evaluation.startswith(shown[:-1]) and len(shown) < len(three_task_evaluation)
    assert code.get_attribute("title") == three_task_evaluation
    font = page.evaluate("e => parseFloat(getComputedStyle(e).fontSize)", code.element_handle())
    assert code.bounding_box()["height"] < 2 * font, "the id wraps"
    assert "mono" in page.evaluate("e => getComputedStyle(e).fontFamily", code.element_handle()).lower()
    cell.locator("button.copy-id").click()
    assert page.evaluate("navigator.clipboard.readText()") == three_task_evaluation
    _no_page_overflow(page)
    shot(page, f"evaluations-{width}px")

    page.goto(f"{live.url}/evaluations/{three_task_evaluation}")
    page.locator("#performance-profile.js-plotly-plot .gtitle").wait_for()
    assert _chart_titles_fit(page) >= 3
    _no_page_overflow(page)
    shot(page, f"evaluation-overview-{width}px")


def test_the_manual_leads_to_the_api_reference(page, live):
    page.goto(f"{live.url}/evaluations")
    page.click("nav >> text=Manual")
    page.wait_for_url(re.compile(r".*/docs/$"))
    assert "RLMesh evaluation platform" in page.title()
    for link, heading in (("Your first evaluation", "Your first evaluation"), ("The request", "The request"),
                          ("Settings", "Settings (environment variables)")):
        page.locator("nav.md-nav a.md-nav__link", has_text=re.compile(rf"^\s*{re.escape(link)}\s*$")).first.click()
        page.locator("article h1", has_text=heading).wait_for()
    shot(page, "manual-settings")
    page.goto(f"{live.url}/docs/")
    page.locator("article a[href='/v1/docs']").first.click()
    page.locator(".swagger-ui .info .title").wait_for()
    shot(page, "manual-api-reference")
