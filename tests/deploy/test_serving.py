"""Serving the site the way it is deployed: generated secrets, settings for a TLS proxy, the Content-Security-Policy,
`check --deploy`, advertised URLs from PUBLIC_URL, and chart labels that stay plain text."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.test.client import RequestFactory

from evaluations.reports import charts
from rlmesh_site.proxy import ForwardedForMiddleware

ROOT = Path(__file__).resolve().parents[2]
HOST = "rlmesh.example.org"
#: What an operator sets in production (deploy/rlmesh.env.example), minus services the checks never contact.
PRODUCTION_ENV = {
    "RLMESH_ENV": "production",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "API_KEY_PEPPER": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": HOST,
    "PUBLIC_URL": f"https://{HOST}",
    "RLMESH_BEHIND_PROXY": "true",
    "CACHE_REDIS_URL": "redis://127.0.0.1:6379/1",
}


def settings_in_subprocess(env: dict[str, str], *names: str) -> dict:
    """Import the settings in a fresh interpreter with exactly ``env`` (plus PATH) and return ``names`` as JSON."""
    code = (
        "import json, sys, rlmesh_site.settings as s; "
        "print(json.dumps({n: getattr(s, n) for n in sys.argv[1:]}, default=str))"
    )
    r = subprocess.run([sys.executable, "-c", code, *names], env={"PATH": os.environ["PATH"], **env},
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ secrets
def test_it_generates_secrets_once_into_var_and_reuses_them(tmp_path):
    env = {"RLMESH_VAR_DIR": str(tmp_path)}
    names = ("SECRET_KEY", "API_KEY_PEPPER", "JWT_SIGNING_KEY", "RLMESH_REGISTRY_NOTIFY_SECRET", "RLMESH_REGISTRY_WORKER_SECRET")
    first = settings_in_subprocess(env, *names)
    path = tmp_path / "secrets.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == first
    assert len(set(first.values())) == len(names) and all(len(v) >= 50 for v in first.values())
    assert "insecure" not in first["SECRET_KEY"]
    assert settings_in_subprocess(env, *names) == first  # a later run (or another process) reads the same ones
    assert settings_in_subprocess({**env, "SECRET_KEY": "from-the-environment"}, "SECRET_KEY") == {"SECRET_KEY": "from-the-environment"}


def test_processes_starting_at_once_agree_on_the_secrets(tmp_path):
    code = "import rlmesh_site.settings as s; print(s.SECRET_KEY, s.API_KEY_PEPPER)"
    env = {"PATH": os.environ["PATH"], "RLMESH_VAR_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    outputs = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(outputs) == 1 and not list(tmp_path.glob(".secrets.json.*"))


def test_production_never_reads_the_generated_file(tmp_path):
    settings_in_subprocess({"RLMESH_VAR_DIR": str(tmp_path)}, "SECRET_KEY")  # a development run left one behind
    r = subprocess.run([sys.executable, "-c", "import rlmesh_site.settings"], cwd=ROOT, capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], "RLMESH_VAR_DIR": str(tmp_path), "RLMESH_ENV": "production"})
    assert r.returncode != 0 and "production settings need: SECRET_KEY, API_KEY_PEPPER" in r.stderr


# ------------------------------------------------------- proxy and TLS settings
def test_https_public_url_behind_a_proxy_turns_on_every_tls_setting(tmp_path):
    env = {**PRODUCTION_ENV, "RLMESH_VAR_DIR": str(tmp_path), "PUBLIC_URL": f"https://{HOST}/",
           "CSRF_TRUSTED_ORIGINS": "https://other.example.org, https://b.example.org"}
    got = settings_in_subprocess(
        env, "SECURE_PROXY_SSL_HEADER", "CSRF_TRUSTED_ORIGINS", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
        "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "MIDDLEWARE", "DEBUG",
    )
    assert got["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert got["CSRF_TRUSTED_ORIGINS"] == [f"https://{HOST}", "https://other.example.org", "https://b.example.org"]
    assert got["SESSION_COOKIE_SECURE"] and got["CSRF_COOKIE_SECURE"] and got["SECURE_SSL_REDIRECT"]
    assert got["SECURE_HSTS_SECONDS"] == 365 * 24 * 3600 and got["SECURE_HSTS_INCLUDE_SUBDOMAINS"]
    assert got["MIDDLEWARE"][0] == "rlmesh_site.proxy.ForwardedForMiddleware" and got["DEBUG"] is False


def test_plain_http_development_keeps_cookies_and_hsts_off(tmp_path):
    got = settings_in_subprocess({"RLMESH_VAR_DIR": str(tmp_path)}, "SECURE_PROXY_SSL_HEADER", "SESSION_COOKIE_SECURE",
                                 "SECURE_HSTS_SECONDS", "SECURE_SSL_REDIRECT", "MIDDLEWARE")
    assert got["SECURE_PROXY_SSL_HEADER"] is None and got["SESSION_COOKIE_SECURE"] is False
    assert got["SECURE_HSTS_SECONDS"] == 0 and got["SECURE_SSL_REDIRECT"] is False
    assert "rlmesh_site.proxy.ForwardedForMiddleware" not in got["MIDDLEWARE"]


def test_check_deploy_is_clean_in_production_mode(tmp_path):
    r = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
                       env={"PATH": os.environ["PATH"], **PRODUCTION_ENV, "RLMESH_VAR_DIR": str(tmp_path)},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "System check identified no issues" in r.stdout and "WARNING" not in r.stdout + r.stderr


@pytest.fixture
def behind_proxy(settings):
    """The settings PRODUCTION_ENV produces (the subprocess tests above pin that mapping)."""
    settings.ALLOWED_HOSTS = [HOST]
    settings.PUBLIC_URL = f"https://{HOST}"
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.CSRF_TRUSTED_ORIGINS = [f"https://{HOST}"]
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    return settings


def _sign_in(client: Client, origin: str, **headers):
    client.get("/accounts/login/", HTTP_HOST=HOST, **headers)
    token = client.cookies["csrftoken"].value
    return client.post("/accounts/login/", {"username": "alice-a", "password": "pw-alice-a", "csrfmiddlewaretoken": token},
                       HTTP_HOST=HOST, HTTP_ORIGIN=origin, **headers)


def test_sign_in_behind_the_proxy_passes_the_origin_check(behind_proxy, tenant_a):
    client = Client(enforce_csrf_checks=True)
    r = _sign_in(client, f"https://{HOST}", HTTP_X_FORWARDED_PROTO="https")
    assert r.status_code == 302 and r["Location"] == "/evaluations"
    assert r.cookies["sessionid"]["secure"] and r["Strict-Transport-Security"].startswith("max-age=3600")
    assert client.get("/evaluations", HTTP_HOST=HOST, HTTP_X_FORWARDED_PROTO="https").status_code == 200


def test_without_the_proxy_settings_the_same_sign_in_is_the_old_403(settings, tenant_a, caplog):
    settings.ALLOWED_HOSTS = [HOST]
    settings.CSRF_TRUSTED_ORIGINS = []
    r = _sign_in(Client(enforce_csrf_checks=True), f"https://{HOST}")
    assert r.status_code == 403 and "Origin checking failed" in caplog.text


def test_a_post_from_a_foreign_origin_is_still_refused(behind_proxy, tenant_a):
    r = _sign_in(Client(enforce_csrf_checks=True), "https://evil.example", HTTP_X_FORWARDED_PROTO="https")
    assert r.status_code == 403


def test_the_client_address_is_the_right_most_forwarded_one():
    seen = {}
    middleware = ForwardedForMiddleware(lambda request: seen.setdefault("ip", request.META["REMOTE_ADDR"]))
    middleware(RequestFactory().get("/", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7", REMOTE_ADDR="127.0.0.1"))
    assert seen.pop("ip") == "203.0.113.7"  # what the proxy saw; the left entries are the client's own claims
    middleware(RequestFactory().get("/", HTTP_X_FORWARDED_FOR="unknown", REMOTE_ADDR="127.0.0.1"))
    assert seen.pop("ip") == "127.0.0.1"


# ------------------------------------------------------------------------ CSP
SCRIPT = re.compile(r"<script\b([^>]*)>", re.I)


def _nonce_of(response) -> str:
    policy = response["Content-Security-Policy"]
    script_src = next(d for d in policy.split(";") if d.strip().startswith("script-src"))
    assert "unsafe-inline" not in script_src and "unsafe-eval" not in script_src
    return re.search(r"'nonce-([^']+)'", script_src)[1]


@pytest.mark.parametrize("path", ["/accounts/login/", "/evaluations", "/settings", "/compare", "/evaluations/new"])
def test_every_page_script_carries_the_nonce_of_its_policy(client, tenant_a, path):
    client.force_login(tenant_a.user)
    r = client.get(path)
    assert r.status_code == 200
    nonce = _nonce_of(r)
    scripts = [attrs for attrs in SCRIPT.findall(r.content.decode()) if "application/json" not in attrs]
    assert scripts and all(f'nonce="{nonce}"' in attrs for attrs in scripts)
    assert client.get(path)["Content-Security-Policy"] != r["Content-Security-Policy"]  # a new nonce per response


def test_the_api_docs_page_has_no_inline_script(client):
    r = client.get("/v1/docs")
    assert r.status_code == 200 and "Content-Security-Policy" in r
    html = r.content.decode()
    scripts = SCRIPT.findall(html)
    assert len(scripts) == 3 and all("src=" in attrs for attrs in scripts)
    assert not re.search(r"<script\b[^>]*>\s*[^<\s]", html)  # every <script> is empty: the code comes from files
    init = client.get("/v1/docs?script=")
    assert init.status_code == 200 and init["Content-Type"].startswith("application/javascript")
    assert b"SwaggerUIBundle" in init.content


def test_no_template_has_an_inline_event_handler_or_inline_script():
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text()
        assert not re.search(r"\son[a-z]+\s*=", text), f"{path}: inline event handler (move it to static/js/)"
        assert not re.search(r"<script\b(?![^>]*\bsrc=)[^>]*>", text), f"{path}: inline <script> (use a file)"


# --------------------------------------------------------- advertised URLs
def test_the_empty_list_hint_uses_public_url_not_the_host_header(client, tenant_a, settings):
    settings.PUBLIC_URL = "https://rlmesh.example.org"
    client.force_login(tenant_a.user)
    html = client.get("/evaluations", HTTP_HOST="attacker.example").content.decode()
    assert "export RLMESH_PLATFORM_URL=https://rlmesh.example.org\n" in html and "attacker.example" not in html


# ------------------------------------------------------------------- charts
EVIL = '<a href="https://example.invalid">Click</a>'


def test_chart_labels_reach_plotly_as_escaped_text():
    group = {"key": {"model": EVIL, "task": f"t{EVIL}"}, "successRate": 0.5, "successRateCi": [0.2, 0.8], "episodes": 4}
    fig = charts.success_bars([group], label_fields=["task"], title=f"by {EVIL}")
    trace = fig["data"][0]
    escaped = "&lt;a href=\"https://example.invalid\"&gt;Click&lt;/a&gt;"
    assert trace["name"] == escaped and trace["x"] == [f"t{escaped}"]
    assert EVIL not in json.dumps(fig) and "%{fullData.name}" in trace["hovertemplate"]
    box = charts.reward_distribution({EVIL: [1.0, 2.0]}, title=EVIL)
    assert box["data"][0]["name"] == escaped and EVIL not in json.dumps(box)
    assert charts.reward_distribution({"a & b": [1.0]})["data"][0]["name"] == "a &amp; b"


def test_no_template_comment_spans_lines():
    """Django's ``{# … #}`` is single-line only: a multi-line one is printed on the page as text."""
    import re
    from pathlib import Path

    for path in Path(__file__).resolve().parents[2].joinpath("templates").rglob("*.html"):
        for line in path.read_text().splitlines():
            assert not re.search(r"\{#(?!.*#\})", line), f"{path}: {line.strip()} (use {{% comment %}})"


def test_without_redis_the_rate_limit_counters_are_shared_by_every_web_process(tmp_path):
    """A field case: 35 bad keys in a row were all 401s because each of gunicorn's processes counted its own
    failures in local memory. Without CACHE_REDIS_URL the counters are files under RLMESH_VAR_DIR/cache."""
    from django.core.cache.backends.filebased import FileBasedCache

    caches = settings_in_subprocess({"RLMESH_VAR_DIR": str(tmp_path)}, "CACHES")["CACHES"]
    assert caches["default"] == {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                 "LOCATION": str(tmp_path / "cache")}
    one, other = (FileBasedCache(caches["default"]["LOCATION"], {}) for _ in range(2))  # as two processes open it
    one.add("failures", 0)
    for _ in range(3):
        one.incr("failures")
    assert other.get("failures") == 3
    redis = settings_in_subprocess({"RLMESH_VAR_DIR": str(tmp_path), "CACHE_REDIS_URL": "redis://127.0.0.1:1/0"}, "CACHES")
    assert redis["CACHES"]["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
