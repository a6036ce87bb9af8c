"""Test files whose subject is how the database answers, run again on PostgreSQL.

``RERUN`` lists them; each already passes on the default SQLite database in this run. Here a throwaway PostgreSQL
server is started on a private port (tests.support.services.PostgresServer) and pytest runs each file again in a
child process with ``DATABASE_URL`` pointing at it (pytest-django creates and drops its test database there), so
one test body proves the same answers on both setups.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.live import ROOT
from tests.support.services import PostgresServer, services_available

pytestmark = pytest.mark.live

#: Files that must give the same answers on PostgreSQL as on SQLite.
RERUN = ["tests/api/test_search_and_filters.py"]


@pytest.fixture(scope="module")
def postgres():
    problem = services_available()
    if problem:
        pytest.fail(problem)
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("path", RERUN)
def test_the_file_passes_on_postgresql(postgres, path, tmp_path):
    env = {**os.environ, "DATABASE_URL": postgres.url, "RLMESH_VAR_DIR": str(tmp_path / "var"),
           "RLMESH_EXPECT_VENDOR": "postgresql"}
    run = subprocess.run([sys.executable, "-m", "pytest", path, "-q", "-p", "no:cacheprovider", "-x"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout.splitlines()[-1], run.stdout[-500:]
