"""What an oversized request costs before it is refused (not a timed test): one model × 12,000 tasks (the limit is
1,000 workloads) at ``POST /v1/evaluation-previews`` and ``POST /v1/evaluations``, and an agent run with 12,000
task ids (the limit is 1,000) at ``POST /agents/evaluations/run``.

Prints, per endpoint, the wall time of one refusal (median of ``--repeat``), of each of six sent at once (threads
in this process, one database connection each, the Django test client: no network). The answer must be the 400
naming ``tasks`` (or ``task_ids``). Run it on a commit before ``planning.limits`` for the "before" figure.

Usage: ``.venv/bin/python bench/bench_oversized_requests.py [--tasks 12000] [--repeat 3] [--concurrent 6]
[--only /v1/evaluation-previews]``. Before the fix one refused request held ~3 GB of memory for its whole planning:
send six at once to an old checkout only where that much memory is free. It makes its own SQLite
database in a temporary RLMESH_VAR_DIR (migrations take ~20 s).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RLMESH_VAR_DIR", tempfile.mkdtemp(prefix="bench-oversized-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rlmesh_site.settings")
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")

import django  # noqa: E402

django.setup()
logging.getLogger("django.request").setLevel(logging.ERROR)  # each refusal logs "Bad Request" otherwise

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from evaluations.choices import Role  # noqa: E402
from evaluations.models import ApiKey, Organization  # noqa: E402

TASK = {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 1}


def _bodies(n_tasks: int) -> dict[str, tuple[str, dict, str]]:
    v1 = {"models": ["prebuilt/classic-control-heuristics"],
          "tasks": [TASK] * n_tasks}
    agents = {"env_id": "miniwob", "model": "bench-agent", "endpoint": {"url": "https://agent.example.com/v1"},
              "task_ids": [f"click-test.s{i:04d}" for i in range(n_tasks)], "rollouts_per_example": 1}
    return {
        "/v1/evaluation-previews": ("/v1/evaluation-previews", v1, "tasks"),
        "/v1/evaluations": ("/v1/evaluations", v1, "tasks"),
        "/agents/evaluations/run": ("/agents/evaluations/run", agents, "task_ids"),
    }


def _client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _send(key: str, path: str, body: dict, field: str) -> float:
    started = time.perf_counter()
    r = _client(key).post(path, json.dumps(body, separators=(",", ":")), content_type="application/json")
    took = time.perf_counter() - started
    paths = [d["path"] for d in r.json()["error"]["details"]] if r.status_code == 400 else []
    assert r.status_code == 400 and field in paths, (path, r.status_code, r.content[:300])
    return took


def _concurrent(key: str, path: str, body: dict, field: str, n: int) -> list[float]:
    times: list[float] = []

    def one():
        try:
            times.append(_send(key, path, body, field))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=12_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=6, help="requests sent at once (0: skip)")
    parser.add_argument("--only", default="", help="one endpoint path, e.g. /v1/evaluation-previews")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    org = Organization.objects.create(slug="bench", name="Bench")
    key, _ = ApiKey.issue(organization=org, user=None, name="bench", role=Role.ADMIN)
    print(f"{args.tasks} tasks (limits: 1,000 workloads, 1,000 task ids); seconds")
    print(f"{'endpoint':<28} {'refusal':>8} {f'{args.concurrent} at once: median, max':>24}")
    for label, (path, body, field) in _bodies(args.tasks).items():
        if args.only and label != args.only:
            continue
        single = statistics.median(_send(key, path, body, field) for _ in range(args.repeat))
        print(f"{label:<28} {single:8.3f}", end="", flush=True)
        together = _concurrent(key, path, body, field, args.concurrent) if args.concurrent else [math.nan]
        print(f" {statistics.median(together):12.3f} {max(together):10.3f}")


if __name__ == "__main__":
    main()
