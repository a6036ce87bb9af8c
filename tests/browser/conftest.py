"""Real headless Chromium (Debian's) driven by Playwright; no browser download (spec/BROWSER.md)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
#: Screenshots of every page the browser tests visit land here (named in docs/working/tests.md).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "screenshots"


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            # Keep the browser off the network: only loopback resolves.
            args=["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, permissions=["clipboard-read", "clipboard-write"])
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())  # hx-confirm prompts
    page.goto(f"{live.url}/accounts/login/")
    page.evaluate("navigator.clipboard.writeText('')")  # the clipboard is shared by the browser's contexts
    page.fill("#id_username", "demo")
    page.fill("#id_password", "demo-password")
    page.click("#sign-in")
    page.wait_for_url(re.compile(r".*/evaluations$"))
    yield page
    context.close()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
