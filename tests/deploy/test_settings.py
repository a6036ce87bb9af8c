"""Settings helpers read the environment strictly."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from rlmesh_site.env import env_bool, env_float, env_int, env_str


def test_env_helpers(monkeypatch, tmp_path):
    monkeypatch.setenv("X_INT", "12")
    monkeypatch.setenv("X_FLOAT", "2.5")
    monkeypatch.setenv("X_BOOL", "False")
    assert env_int("X_INT", 1) == 12 and env_float("X_FLOAT", 1.0) == 2.5 and env_bool("X_BOOL", True) is False
    assert env_int("X_MISSING", 7) == 7
    secret = tmp_path / "s"
    secret.write_text("from-file\n")
    monkeypatch.setenv("X_SECRET_FILE", str(secret))
    assert env_str("X_SECRET") == "from-file"
    for name, fn in (("X_INT", env_int), ("X_FLOAT", env_float), ("X_BOOL", env_bool)):
        monkeypatch.setenv(name, "nope")
        with pytest.raises(ImproperlyConfigured):
            fn(name, 0)


def test_production_requires_secrets(monkeypatch):
    import subprocess
    import sys

    env = {"RLMESH_ENV": "production", "PATH": "/usr/bin:/bin", "RLMESH_VAR_DIR": "/tmp/rlm-settings-test"}
    r = subprocess.run([sys.executable, "-c", "import rlmesh_site.settings"], env=env, capture_output=True, text=True, cwd=".")
    assert r.returncode != 0 and "production settings need: SECRET_KEY, API_KEY_PEPPER, PUBLIC_URL, ALLOWED_HOSTS" in r.stderr


def test_the_embedded_databases_are_owner_only(tmp_path):
    import os
    import subprocess
    import sys

    var = tmp_path / "var"
    var.mkdir()
    (var / "rlmesh.sqlite3").touch(mode=0o644)  # an old world-readable database is narrowed too
    os.chmod(var / "rlmesh.sqlite3", 0o644)
    env = {"PATH": "/usr/bin:/bin", "RLMESH_VAR_DIR": str(var), "RLMESH_WORKFLOW_EDITION": "2026.06"}
    r = subprocess.run([sys.executable, "-c", "import rlmesh_site.settings"], env=env, capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(__file__)))
    assert r.returncode == 0, r.stderr
    modes = {p.name: p.stat().st_mode & 0o777 for p in var.glob("*.sqlite3")}
    assert modes == {"rlmesh.sqlite3": 0o600, "celery-broker.sqlite3": 0o600}
