"""Slow downloads against the rest of the site, measured in one run (issue 33; not a timed test).

One live platform (SQLite, a Celery worker) serves a 24 MiB dataset zip. Two web servers stand in front of the same
database, side by side: the one deployed now (gunicorn running uvicorn's ASGI loop, ``rlmesh_site.asgi``: file
transfers sent from the event loop) and the one deployed before (gunicorn ``gthread``, 2 processes × 4 threads,
``rlmesh_site.wsgi``: a thread per transfer). For each: the latency of the sign-in page and of another organization's
``/v1/info`` with no download, then with 32 slow readers (eight keys × four downloads, each key's bound, 20 KB/s
each). A request that takes longer than 6 s counts as timed out (the issue's figure).

Usage: ``.venv/bin/python bench/bench_slow_readers.py [rounds]``; prints a table and writes it to
``bench/results/slow_readers_<date>.txt``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.live import BIN, LivePlatform, free_port  # noqa: E402
from tests.support.slow_readers import latency, seed, start_readers, submit_and_wait  # noqa: E402

SIZE = 24 * 2**20
TIMEOUT = 6.0


def old_server(platform: LivePlatform) -> tuple[subprocess.Popen, int]:
    """gunicorn as deployed before: gthread workers on the WSGI app, on a port of its own."""
    port = free_port()
    env = {**platform.env, "PORT": str(port), "RLMESH_ASGI": "0", "WEB_CONCURRENCY": "2"}
    proc = subprocess.Popen([str(BIN / "gunicorn"), "-c", "python:rlmesh_site.gunicorn_conf", "-k", "gthread",
                             "--threads", "4", "rlmesh_site.wsgi"], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(150):
        try:
            if latency(f"http://127.0.0.1:{port}/v1/info", timeout=2)[0] == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the gthread server did not start")


def measure(port: int, other_key: str, rounds: int) -> dict:
    out = {"login": [], "info": [], "timeouts": 0}
    for _ in range(rounds):
        for name, path, headers in (("login", "/accounts/login/", {}),
                                    ("info", "/v1/info", {"Authorization": f"Bearer {other_key}"})):
            try:
                status, seconds = latency(f"http://127.0.0.1:{port}{path}", headers, timeout=TIMEOUT)
            except OSError:
                out["timeouts"] += 1
                continue
            if status == 200:
                out[name].append(seconds * 1000)
    return out


def row(server: str, readers: int, m: dict) -> str:
    def cell(ms):
        return f"{statistics.median(ms):8.1f} {max(ms):8.1f}" if ms else f"{'—':>8} {'—':>8}"
    return f"{server:<22} {readers:>7} {cell(m['login'])} {cell(m['info'])} {m['timeouts']:>9}"


def main(rounds: int = 10) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        platform = LivePlatform(Path(tmp)).start()
        old = None
        try:
            public_id = submit_and_wait(platform)
            seeded = seed(platform, public_id, size=SIZE, callers=8)
            old, old_port = old_server(platform)
            path = f"/v1/evaluations/{public_id}/lerobot-dataset.zip"
            lines = [f"{'server':<22} {'readers':>7} {'login p50':>8} {'max':>8} {'info p50':>8} {'max':>8} "
                     f"{'timeouts':>9}   (ms; 32 readers at 20 KB/s of a {SIZE // 2**20} MiB zip, {rounds} rounds)"]
            for name, port in (("asgi (now)", platform.port), ("gthread 2x4 (before)", old_port)):
                lines.append(row(name, 0, measure(port, seeded["other"], rounds)))
                platform.port = port  # the readers dial this server
                readers = start_readers(platform, path, seeded["keys"], per_key=4)
                try:
                    lines.append(row(name, len(readers), measure(port, seeded["other"], rounds)))
                finally:
                    for reader in readers:
                        reader.stop.set()
                time.sleep(2)
            text = "\n".join(lines)
            print(text)
            (ROOT / "bench" / "results" / f"slow_readers_{time.strftime('%Y-%m-%d')}.txt").write_text(text + "\n")
        finally:
            if old is not None:
                os.killpg(old.pid, 9)
            platform.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
