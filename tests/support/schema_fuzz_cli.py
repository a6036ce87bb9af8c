"""``schemathesis run --checks all`` against a real server, with the fuzz test's world and real ids.

    .venv/bin/python -m tests.support.schema_fuzz_cli [N]      # N examples per operation (default 30)

Makes a throwaway SQLite platform under a temp dir (migrated, seeded by tests.support.fuzz.seed_world), serves it
with Django's runserver on a free loopback port, and runs schemathesis's command line with every check and every
phase against ``/v1/schema``. ``SCHEMATHESIS_HOOKS`` loads this module's hook (real ids in positive cases, as the
pytest run does) and ``--exclude-checks`` nothing: for the five operations whose bodies depend on stored state,
``positive_data_acceptance`` also expects a 400 (schemathesis.toml written beside the run). Prints schemathesis's summary
and exits with its status. The server is stopped on exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.live import ROOT, free_port

WORLD_ENV = "RLMESH_FUZZ_WORLD"

if os.environ.get(WORLD_ENV):  # imported by schemathesis as the hooks module
    import django
    import schemathesis

    django.setup()

    from tests.support.fuzz import real_values_in_positive_cases

    _REAL = json.loads(Path(os.environ[WORLD_ENV]).read_text())["real"]

    @schemathesis.hook
    def flatmap_case(context, case):
        return real_values_in_positive_cases(case, _REAL)


_SEED = """
import json, sys
import django
django.setup()
from tests.conftest import Tenant
from tests.support.fuzz import seed_world
tenant = Tenant("a")
json.dump({"key": tenant.key, "real": seed_world(tenant)}, open(sys.argv[1], "w"), default=str)
"""


def _config(root: Path) -> Path:
    import django

    django.setup()
    from tests.support.fuzz import STATE_DEPENDENT_BODIES

    lines = ["[generation]", "deterministic = true", ""]
    for method, path in sorted(STATE_DEPENDENT_BODIES):
        lines += ["[[operations]]", f'include-path = "{path}"', f'include-method = "{method}"',
                  # ``--checks all`` overrides a per-operation ``enabled = false``; the expected statuses hold.
                  'checks.positive_data_acceptance.expected-statuses = '
                  '["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]', ""]
    (root / "schemathesis.toml").write_text("\n".join(lines))
    return root / "schemathesis.toml"


def main(examples: int = 30) -> int:
    root = Path(tempfile.mkdtemp(prefix="rlmesh-fuzz-"))
    env = {**os.environ, "RLMESH_VAR_DIR": str(root), "DATABASE_URL": f"sqlite:///{root / 'db.sqlite3'}",
           "DJANGO_SETTINGS_MODULE": "rlmesh_site.settings", "RLMESH_WORKFLOW_EDITION": "2026.06",
           "RLMESH_REGISTRY_HOST": "127.0.0.1:9", "PYTHONPATH": str(ROOT)}
    os.environ.update(env)  # this process reads the operations list from tests.support.fuzz (Django set up)
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    world = root / "world.json"
    subprocess.run([python, "-c", _SEED, str(world)], cwd=ROOT, env=env, check=True)
    port = free_port()
    with open(root / "server.log", "wb") as log:
        server = subprocess.Popen([python, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"], cwd=ROOT,
                                  env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        time.sleep(3)
        key = json.loads(world.read_text())["key"]
        cmd = [str(Path(python).parent / "schemathesis"), "--config-file", str(_config(root)), "run",
               f"http://127.0.0.1:{port}/v1/schema?format=json", "--checks", "all", "-n", str(examples),
               "-H", f"Authorization: Bearer {key}", "--wait-for-schema", "30", "-w", "1", "--no-color",
               # as the pytest run: the reference pattern with the route's own exclusions filters many drafts
               "--suppress-health-check", "filter_too_much"]
        return subprocess.run(cmd, cwd=root, env={**env, "SCHEMATHESIS_HOOKS": __name__, WORLD_ENV: str(world)}).returncode
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
