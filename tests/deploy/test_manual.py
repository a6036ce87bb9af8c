"""The manual: MkDocs builds it strictly (a broken link fails), the platform serves it under /docs with a CSP that
admits exactly its inline scripts, and API errors link the page that explains them."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evaluations.api.exceptions import DOCS_PAGES
from evaluations.views import docs as docs_view

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict"]
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def _build(config_dir: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*MKDOCS, "-f", str(config_dir / "mkdocs.yml"), "-d", str(site)], cwd=config_dir,
                          env=ENV, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("manual") / "site"
    result = _build(ROOT, site)
    assert result.returncode == 0, result.stderr
    return site


@pytest.fixture
def served(built_site, monkeypatch) -> Path:
    monkeypatch.setattr(docs_view, "SITE_DIR", built_site)
    return built_site


def _nav_pages(nav) -> list[str]:
    out = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            out += _nav_pages(value) if isinstance(value, list) else [value]
    return out


class _Loader(yaml.SafeLoader):
    pass


def test_every_page_is_in_the_navigation_and_built(built_site):
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)
    pages = _nav_pages(config["nav"])
    on_disk = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(pages) == on_disk
    for page in pages:
        html = built_site / ("index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html")
        assert html.is_file(), page


def test_a_broken_link_fails_the_strict_build(tmp_path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "using" / "scores.md"
    page.write_text(page.read_text() + "\nSee [nowhere](no-such-page.md).\n")
    result = _build(tmp_path, tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-page.md" in result.stderr + result.stdout


def test_the_manual_loads_nothing_from_another_host(built_site):
    loads = re.compile(r"""<(?:script|link|img|iframe)[^>]+(?:src|href)=["'](https?:)?//""")
    for page in built_site.rglob("*.html"):
        assert not loads.search(page.read_text()), page


@pytest.mark.django_db
def test_served_under_docs_with_hashes_of_its_inline_scripts(client, served):
    response = client.get("/docs/")
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert b"RLMesh evaluation platform" in body
    inline = re.findall(rb"<script>(.*?)</script>", body, re.S)
    assert inline
    csp = response["Content-Security-Policy"]
    for script in inline:
        assert "'sha256-" + base64.b64encode(hashlib.sha256(script).digest()).decode() + "'" in csp
    assert "'unsafe-inline'" not in csp.split("script-src", 1)[1].split(";", 1)[0]


@pytest.mark.django_db
def test_pages_assets_redirects_and_refusals(client, served):
    assert client.get("/docs")["Location"] == "/docs/"
    assert client.get("/docs/using/request")["Location"] == "/docs/using/request/"
    page = client.get("/docs/using/request/")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    css = next(served.glob("assets/stylesheets/*.css")).relative_to(served)
    assert client.get(f"/docs/{css}")["Content-Type"].startswith("text/css")
    missing = client.get("/docs/no/such/page/")
    assert missing.status_code == 404 and b"404" in missing.content
    for escape in ("/docs/../manage.py", "/docs/%2e%2e/manage.py", "/docs//etc/passwd"):
        assert client.get(escape).status_code == 404, escape
    assert client.post("/docs/").status_code == 405


@pytest.mark.django_db
def test_not_built_says_how_to_build(client, monkeypatch, tmp_path):
    monkeypatch.setattr(docs_view, "SITE_DIR", tmp_path / "absent")
    response = client.get("/docs/")
    assert response.status_code == 404 and b"make docs" in response.content


def test_every_error_documentation_link_is_a_page(built_site):
    for code, page in DOCS_PAGES.items():
        assert (built_site / page / "index.html").is_file(), code


@pytest.mark.django_db
def test_an_api_error_links_its_page(tenant_a, settings):
    response = tenant_a.client().post("/v1/evaluation-previews", {"tasks": []}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["docs"] == f"{settings.PUBLIC_URL.rstrip('/')}/docs/using/request/"


@pytest.mark.django_db
def test_a_bad_query_parameter_links_the_filters_page(tenant_a, settings, built_site):
    response = tenant_a.client().get("/v1/evaluations?status=finished")
    assert response.status_code == 400
    assert response.json()["error"]["docs"] == f"{settings.PUBLIC_URL.rstrip('/')}/docs/using/search-and-filters/"
    assert (built_site / "using" / "search-and-filters" / "index.html").is_file()


@pytest.mark.django_db
def test_the_dashboard_header_links_the_manual(client, tenant_a):
    client.login(username=tenant_a.user.username, password=f"pw-{tenant_a.user.username}")
    assert b'href="/docs/"' in client.get("/evaluations").content
