"""How the one sign-in limit behaves against a real server (not a timed test): gunicorn with ``--workers`` processes
(default 3) and the file cache (no Redis), ``RATELIMIT_AUTH_FAILURES`` as configured (default 30/m).

From one address (loopback) it sends, in order, and prints the status codes it got (run-length encoded) and the
wall time per request:

1. ``--guesses`` wrong passwords, alternating ``/accounts/login/`` and ``/admin/login/`` (each with its CSRF
   cookie and token, as a browser sends them), then the right password of the seeded user on each form;
2. bad API keys on ``/v1/evaluations`` and bad registry Basic logins;
3. the seeded valid API key on ``/v1/evaluations`` and at the registry token endpoint, from the same address.

Usage: ``.venv/bin/python bench/bench_sign_in_limit.py [--guesses 40] [--workers 3]``.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.live import LivePlatform  # noqa: E402

PASSWORD = "a-right-password-1"


def _runs(codes: list[int]) -> str:
    return ", ".join(f"{code}×{len(list(group))}" for code, group in itertools.groupby(codes))


def _login(session: requests.Session, url: str, password: str) -> int:
    form = session.get(url, timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    data = {"username": "bench", "password": password, "csrfmiddlewaretoken": token[1] if token else ""}
    return session.post(url, data=data, headers={"Referer": url}, allow_redirects=False, timeout=30).status_code


def _timed(label: str, send, n: int) -> None:
    started = time.perf_counter()
    codes = [send(i) for i in range(n)]
    per = (time.perf_counter() - started) / n * 1000
    print(f"{label:<58} {_runs(codes):<28} {per:7.1f} ms/request")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--guesses", type=int, default=40)
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args()
    var = Path(tempfile.mkdtemp(prefix="bench-sign-in-"))
    platform = LivePlatform(var, WEB_CONCURRENCY=str(args.workers))
    platform.env.pop("CACHE_REDIS_URL", None)
    platform.prepare()
    platform.manage("shell", "-c", "from django.contrib.auth.models import User; "
                    f"User.objects.create_superuser('bench', 'bench@example.com', '{PASSWORD}')")
    platform.start_web()
    try:
        url = platform.url
        forms = [f"{url}/accounts/login/", f"{url}/admin/login/"]
        session = requests.Session()
        print(f"gunicorn, {args.workers} processes, file cache; codes in order (code×count)")
        _timed(f"{args.guesses} wrong passwords, dashboard and admin alternating",
               lambda i: _login(session, forms[i % 2], "wrong"), args.guesses)
        _timed("the right password, on each form", lambda i: _login(session, forms[i % 2], PASSWORD), 2)
        bad_key = {"Authorization": "Bearer rlm_" + "x" * 43}
        _timed("10 bad API keys on /v1/evaluations",
               lambda i: requests.get(f"{url}/v1/evaluations", headers=bad_key, timeout=30).status_code, 10)
        basic = base64.b64encode(b"anyone:rlm_" + b"y" * 43).decode()
        _timed("10 bad registry Basic logins",
               lambda i: requests.get(f"{url}/v1/registry/token?service=rlmesh-registry",
                                      headers={"Authorization": f"Basic {basic}"}, timeout=30).status_code, 10)
        good = {"Authorization": f"Bearer {platform.api_key}"}
        _timed("10 requests with the valid API key (same address)",
               lambda i: requests.get(f"{url}/v1/evaluations", headers=good, timeout=30).status_code, 10)
        good_basic = base64.b64encode(f"anyone:{platform.api_key}".encode()).decode()
        _timed("10 registry logins with the valid API key (same address)",
               lambda i: requests.get(f"{url}/v1/registry/token?service=rlmesh-registry",
                                      headers={"Authorization": f"Basic {good_basic}"}, timeout=30).status_code, 10)
    finally:
        platform.stop()


if __name__ == "__main__":
    os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")
    main()
