"""The site as deployed (gunicorn, DEBUG off, WhiteNoise, the Content-Security-Policy) in real headless Chromium:
styles, htmx, Plotly charts and the API docs all load, nothing breaks the policy, chart labels stay text, and the
form helpers that replaced inline handlers work."""

from __future__ import annotations

import io
import json
import re
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.browser.conftest import shot

pytestmark = pytest.mark.live

BUNDLE = Path(__file__).resolve().parents[1] / "fixtures" / "cartpole_result_bundle.zip"
EVIL = '<a href="https://example.invalid">Click</a>'
#: Reports every CSP violation of every document to the console, where the test collects it.
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", function (e) {
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " " + (e.sample || ""));
});
"""


@pytest.fixture
def violations(page):
    """CSP violations (and any other console error) of every page the test opens after this fixture."""
    errors: list[str] = []
    page.context.add_init_script(REPORT_VIOLATIONS)
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    return errors


def import_bundle_with_model_named(live, name: str) -> str:
    """Import the CartPole fixture bundle with its "pd" model renamed; return the evaluation id."""
    src = zipfile.ZipFile(BUNDLE)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("result.json"):
                doc = json.loads(data)
                for workload in doc["workloads"]:
                    workload["model"] = name if workload["model"] == "pd" else workload["model"]
                data = json.dumps(doc).encode()
            dst.writestr(item, data)
    req = urllib.request.Request(f"{live.url}/v1/evaluations/imports?name=markup%20in%20names", data=out.getvalue(),
                                 headers={"Authorization": f"Bearer {live.api_key}", "Content-Type": "application/zip"})
    return json.load(urllib.request.urlopen(req, timeout=60))["id"]


def assert_chart_shows_text(page, chart: str) -> None:
    plot = page.locator(f"[data-plotly={chart}] .main-svg").first
    plot.wait_for()
    svg = page.locator(f"[data-plotly={chart}] svg")
    assert svg.locator("a").count() == 0  # Plotly made no link of the name
    assert EVIL in " ".join(svg.all_text_contents())  # the name is shown, character for character


def test_dashboard_and_docs_load_everything_under_the_policy(page, live, violations):
    eval_id = import_bundle_with_model_named(live, EVIL)
    page.goto(f"{live.url}/evaluations/{eval_id}")
    # Styles: app.css (and its @import) came from WhiteNoise under their hashed names.
    assert page.evaluate("getComputedStyle(document.querySelector('.topbar')).backgroundColor") == "rgb(22, 27, 38)"
    assert re.search(r"/static/css/app\.[0-9a-f]{12}\.css$", page.locator("link[rel=stylesheet]").get_attribute("href"))
    assert page.evaluate("typeof htmx !== 'undefined' && typeof Plotly !== 'undefined'")
    assert_chart_shows_text(page, "chart-success")
    assert_chart_shows_text(page, "chart-reward")
    # The hover label names the model too (Plotly's drag layer above the bars takes the pointer: force).
    page.locator("[data-plotly=chart-success] .point").first.hover(force=True)
    page.locator("[data-plotly=chart-success] .hoverlayer .hovertext").first.wait_for()
    assert EVIL in " ".join(page.locator("[data-plotly=chart-success] .hoverlayer").all_text_contents())
    assert page.locator("[data-plotly=chart-success] svg a").count() == 0
    shot(page, "deployed-overview-markup-in-name")

    page.click("a[data-tab=episodes]")  # an htmx swap
    page.locator("[data-tab-content=episodes]").wait_for()
    assert page.url.endswith("/episodes")

    page.goto(f"{live.url}/compare?evaluations={eval_id}")
    assert_chart_shows_text(page, "chart-compare")
    shot(page, "deployed-compare-markup-in-name")

    page.goto(f"{live.url}/v1/docs")
    page.locator(".opblock").first.wait_for()
    assert page.locator(".opblock").count() > 10
    assert page.locator(".swagger-ui .info .title").inner_text().startswith("RLMesh evaluation platform API")
    shot(page, "deployed-api-docs")
    page.goto(f"{live.url}/settings")
    page.goto(f"{live.url}/evaluations/new")
    page.locator("#preview").wait_for()
    assert violations == []


def test_member_forms_confirm_with_the_name_as_text_and_submit_on_change(page, live, violations):
    # A name that breaks out of a JavaScript string if it is ever pasted into an inline handler again.
    name = "x');window.pwned=1;('"
    live.manage("seed_demo", "--org", "demo", "--username", name)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))  # the page fixture accepts them
    page.goto(f"{live.url}/settings")
    row = page.locator("#members-table tr", has_text=name)
    with page.expect_navigation():
        row.locator("select[name=role]").select_option("viewer")  # data-autosubmit
    assert page.locator("#members-table tr", has_text=name).locator("select[name=role]").input_value() == "viewer"
    with page.expect_navigation():
        page.locator("#members-table tr", has_text=name).locator("button", has_text="Remove").click()
    assert dialogs == [f"Remove {name}?"]
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator("#members-table tr", has_text=name).count() == 0
    assert violations == []
