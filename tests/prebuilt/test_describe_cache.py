"""The describe cache (evaluations/prebuilt/describing.py): an envelope is built once per source and code, read back
afterwards, and built again when the source, the prebuilt code or the interpreter's packages change."""

from __future__ import annotations

import json
import sys

import pytest

from evaluations.prebuilt import describing

SOURCE = "python://evaluations.prebuilt.envs:ClassicControl"


@pytest.fixture
def builds(settings, tmp_path, monkeypatch):
    """The cache in a fresh folder; each real build is recorded."""
    settings.RLMESH_DESCRIBE_CACHE_DIR = str(tmp_path / "describe")
    calls = []
    real = describing._describe

    def build(python, target):
        calls.append(target)
        return real(python, target)

    monkeypatch.setattr(describing, "_describe", build)
    return calls


def test_an_envelope_is_built_once_and_read_back_equal(builds, tmp_path):
    first = describing.describe_source(SOURCE)
    again = describing.describe_source(SOURCE)
    assert first and first == again and first["kind"] == "env"
    assert builds == ["evaluations.prebuilt.envs:ClassicControl"]
    (cached,) = (tmp_path / "describe").glob("*.json")
    assert json.loads(cached.read_text()) == first


def test_no_cache_folder_builds_every_time(builds, settings):
    settings.RLMESH_DESCRIBE_CACHE_DIR = None
    describing.describe_source(SOURCE)
    describing.describe_source(SOURCE)
    assert len(builds) == 2


def test_a_failed_description_is_not_cached(builds, monkeypatch, tmp_path):
    monkeypatch.setattr(describing, "_describe", lambda python, target: builds.append(target) or {})
    assert describing.describe_source(SOURCE) == {} and describing.describe_source(SOURCE) == {}
    assert len(builds) == 2 and not list((tmp_path / "describe").glob("*.json"))


def test_the_key_follows_the_source_the_code_and_the_packages(monkeypatch, tmp_path):
    key = describing.describe_key(SOURCE, sys.executable)
    assert key == describing.describe_key(SOURCE, sys.executable)
    assert key != describing.describe_key(SOURCE.replace("ClassicControl", "Other"), sys.executable)
    # another interpreter with other packages
    venv = tmp_path / "venv"
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    python = str(venv / "bin" / "python")
    before = describing.describe_key(SOURCE, python)
    (site / "rlmesh-0.1.1.dist-info").mkdir()
    assert describing.describe_key(SOURCE, python) != before
    # a change to the prebuilt code
    prebuilt = tmp_path / "prebuilt"
    prebuilt.mkdir()
    (prebuilt / "envs.py").write_text("A = 1\n")
    monkeypatch.setattr(describing, "PREBUILT_DIR", prebuilt)
    code_before = describing.describe_key(SOURCE, python)
    (prebuilt / "envs.py").write_text("A = 2\n")
    assert describing.describe_key(SOURCE, python) != code_before
