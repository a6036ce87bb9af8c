"""deploy/Caddyfile, for real: Debian's Caddy terminates TLS (its internal CA, on free ports) in front of gunicorn
running in production mode behind the proxy setting, and a browser-like client signs in to the dashboard and an
API client reads /v1 through it. Skipped only where the caddy binary is missing (.ci/run installs it)."""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import time

import pytest
import requests

from tests.support.live import ROOT, LivePlatform, free_port

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(shutil.which("caddy") is None, reason="caddy is not installed (apt-get install caddy)"),
]

#: Test-only global options around the unchanged deploy/Caddyfile: no admin API, free ports on loopback, the
#: internal CA for every name, its root kept out of the system trust store, state under the test's folder.
GLOBAL = """{{
	admin off
	skip_install_trust
	local_certs
	default_bind 127.0.0.1
	http_port {http_port}
	https_port {https_port}
	storage file_system {data}
}}
import {site}
"""


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    """(base URL through Caddy, CA bundle to verify it, the platform behind it)."""
    var = tmp_path_factory.mktemp("caddy")
    https_port = free_port()
    public_url = f"https://localhost:{https_port}"
    platform = LivePlatform(
        var, RLMESH_ENV="production", SECRET_KEY=secrets.token_urlsafe(50), API_KEY_PEPPER=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="localhost", PUBLIC_URL=public_url, RLMESH_BEHIND_PROXY="true",
    )
    platform.prepare()
    platform.start_web()
    config = var / "Caddyfile"
    config.write_text(GLOBAL.format(http_port=free_port(), https_port=https_port, data=var / "caddy-data",
                                    site=ROOT / "deploy" / "Caddyfile"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(var), "XDG_DATA_HOME": str(var / "xdg-data"),
           "XDG_CONFIG_HOME": str(var / "xdg-config"), "RLMESH_HOST": "localhost",
           "RLMESH_UPSTREAM": f"127.0.0.1:{platform.port}"}
    log = open(var / "caddy.log", "wb")
    caddy = subprocess.Popen(["caddy", "run", "--config", str(config), "--adapter", "caddyfile"], env=env,
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    ca = var / "caddy-data" / "pki" / "authorities" / "local" / "root.crt"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{public_url}/v1/info", verify=str(ca), timeout=2)
                break
            except (requests.ConnectionError, OSError):
                if caddy.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("caddy did not start:\n" + (var / "caddy.log").read_text()[-3000:])
                time.sleep(0.3)
        yield public_url, str(ca), platform
    finally:
        caddy.terminate()
        caddy.wait(timeout=10)
        platform.stop()


def test_the_dashboard_sign_in_works_through_the_tls_proxy(proxied):
    url, ca, _ = proxied
    browser = requests.Session()
    browser.verify = ca
    browser.trust_env = False  # else REQUESTS_CA_BUNDLE from the environment overrides verify
    page = browser.get(f"{url}/accounts/login/")
    assert page.status_code == 200 and "Caddy" in page.headers["Server"]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    # What a browser sends with the form: its Origin, the CSRF cookie and the hidden token.
    r = browser.post(f"{url}/accounts/login/", data={"username": "demo", "password": "demo-password",
                     "csrfmiddlewaretoken": token}, headers={"Origin": url, "Referer": f"{url}/accounts/login/"},
                     allow_redirects=False)
    assert r.status_code == 302, r.text[:500]
    assert r.headers["Location"] == "/evaluations"
    session_cookie = next(c for c in browser.cookies if c.name == "sessionid")
    assert session_cookie.secure
    dashboard = browser.get(f"{url}/evaluations")
    assert dashboard.status_code == 200 and "Sign out" in dashboard.text
    assert dashboard.headers["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "'nonce-" in dashboard.headers["Content-Security-Policy"]
    css = re.search(r'href="(/static/css/app\.[0-9a-f]+\.css)"', dashboard.text)[1]
    assert browser.get(f"{url}{css}").status_code == 200  # WhiteNoise behind the proxy


def test_the_api_works_through_the_tls_proxy_and_advertises_public_url(proxied):
    url, ca, platform = proxied
    headers = {"Authorization": f"Bearer {platform.api_key}"}
    info = requests.get(f"{url}/v1/info", verify=ca, timeout=10).json()
    assert info["urls"]["api"] == f"{url}/v1"
    r = requests.get(f"{url}/v1/evaluations", headers=headers, verify=ca, timeout=10)
    assert r.status_code == 200 and r.json()["items"] == []


def test_plain_http_that_bypasses_the_proxy_is_sent_to_https(proxied):
    _, _, platform = proxied
    r = requests.get(f"http://127.0.0.1:{platform.port}/v1/info", headers={"Host": "localhost"}, allow_redirects=False,
                     timeout=10)
    assert r.status_code == 301 and r.headers["Location"] == "https://localhost/v1/info"
