"""deploy/ and the manual's settings page (docs/running/settings.md): every variable the code reads is documented, and the systemd units
have what the production layout relies on. (tests/deploy/test_caddy.py runs deploy/Caddyfile for real.)"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
#: Read from the environment but not settings: the interpreter's and Django's own plumbing.
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE", "PYTHONPATH"}
PY_READS = re.compile(
    r"""(?:env_(?:str|int|bool|float|list)\(|os\.environ(?:\.get|\.setdefault)?\(|os\.environ\[)\s*["']([A-Z][A-Z0-9_]*)["']"""
)
SH_READS = re.compile(r"\$\{([A-Z][A-Z0-9_]*):-")


def python_settings() -> set[str]:
    names = set()
    for path in [*(ROOT / "rlmesh_site").glob("*.py"), *(ROOT / "evaluations").rglob("*.py")]:
        names |= set(PY_READS.findall(path.read_text()))
    return names - NOT_SETTINGS


def script_settings() -> set[str]:
    names = set()
    for path in [*(ROOT / "scripts").glob("*.sh"), *(ROOT / "containers").rglob("*.sh"), *DEPLOY.glob("*.sh")]:
        names |= set(SH_READS.findall(path.read_text()))
    return names


def readme_table() -> str:
    """The manual's settings page (docs/running/settings.md): the table of every variable."""
    return (ROOT / "docs" / "running" / "settings.md").read_text()


def test_the_scan_finds_the_settings_it_should():
    found = python_settings()
    assert {"SECRET_KEY", "RLMESH_SHARD_MAX_ATTEMPTS", "RLMESH_REGISTRY_WORKER_SECRET", "PORT", "WEB_CONCURRENCY",
            "RLMESH_BEHIND_PROXY", "MUJOCO_GL"} <= found
    assert {"RLMESH_SANDBOX_SUBNET", "MW_VENV", "RLMESH_ENV_FILE"} <= script_settings()


def test_every_setting_the_code_reads_is_in_the_settings_page():
    table = readme_table()
    missing = sorted(n for n in python_settings() | script_settings() if f"`{n}`" not in table and f"`{n}=" not in table)
    assert not missing, f"add to the settings table in docs/running/settings.md: {missing}"


def test_the_env_file_example_lists_every_setting_of_the_processes():
    example = (DEPLOY / "rlmesh.env.example").read_text()
    listed = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]*)=", example, re.M))
    missing = sorted(python_settings() - listed)
    assert not missing, f"add to deploy/rlmesh.env.example: {missing}"
    active = dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", example, re.M))
    assert active["RLMESH_ENV"] == "production" and active["RLMESH_BEHIND_PROXY"] == "true"
    assert active["PUBLIC_URL"].startswith("https://")


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    text = (DEPLOY / name).read_text().replace("\\\n", " ")  # systemd's line continuations
    parser.read_string(text)
    return parser


@pytest.mark.parametrize("name", ["rlmesh-web.service", "rlmesh-worker.service", "rlmesh-beat.service",
                                  "rlmesh-registry.service"])
def test_every_unit_restarts_reads_the_shared_settings_and_starts_at_boot(name):
    u = unit(name)
    assert u["Service"]["Restart"] == "always"
    assert u["Service"]["EnvironmentFile"] == "/etc/rlmesh/rlmesh.env"
    assert u["Service"]["User"] == "rlmesh" and u["Install"]["WantedBy"] == "multi-user.target"
    assert u["Service"]["ExecStart"].startswith("/")


def test_the_units_run_what_the_layout_needs():
    assert "gunicorn -c python:rlmesh_site.gunicorn_conf rlmesh_site.asgi" in unit("rlmesh-web.service")["Service"]["ExecStart"]
    assert "collectstatic" in unit("rlmesh-web.service")["Service"]["ExecStartPre"]
    worker = unit("rlmesh-worker.service")["Service"]["ExecStart"]
    assert "worker -Q shards,maintenance" in worker and re.search(r"-n \S*@%H\b", worker)  # one name per host
    assert " beat " in unit("rlmesh-beat.service")["Service"]["ExecStart"]
    assert "registry_config" in unit("rlmesh-registry.service")["Service"]["ExecStartPre"]
