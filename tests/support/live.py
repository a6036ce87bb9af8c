"""A real platform on this machine for end-to-end tests and benchmarks: a migrated database in a
temp dir, the web server as it is deployed (gunicorn with DEBUG off, collectstatic output served by
WhiteNoise, as ``make demo`` starts it) and a Celery worker as subprocesses, and a demo API key.
Nothing is mocked."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


#: collectstatic output of the first platform of this process; later ones link to it (the files are the same).
_collected: list[Path] = []
#: Every platform of this process that has an API key, for the cleanup after each live test (tests/conftest.py).
STARTED: list["LivePlatform"] = []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LivePlatform:
    def __init__(self, var: Path, **extra_env: str):
        self.var = var
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RLMESH_VAR_DIR": str(var),
            "PUBLIC_URL": self.url,
            "PORT": str(self.port),
            "RLMESH_WORKFLOW_EDITION": "2026.06",
            "DJANGO_SETTINGS_MODULE": "rlmesh_site.settings",
            "PYTHONPATH": str(ROOT),
            # The demo's serving mode (scripts/demo.sh).
            "DEBUG": "False",
            "RLMESH_STATIC_MANIFEST": "True",
            "RLMESH_ACCESS_LOG": str(var / "web-access.log"),
            **extra_env,
        }
        self.procs: dict[str, subprocess.Popen] = {}
        self.worker_count = 0

    def manage(self, *args: str) -> str:
        out = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True, text=True
        )
        return out.stdout

    def collectstatic(self) -> None:
        static = self.var / "static"
        if _collected and _collected[0].is_dir() and _collected[0] != static:
            if static.is_dir() and not static.is_symlink() and not any(static.iterdir()):
                static.rmdir()  # the empty folder settings.py made
            if not static.exists():
                static.symlink_to(_collected[0], target_is_directory=True)
                return
        self.manage("collectstatic", "--noinput", "-v0")
        _collected[:] = [static]

    def start_web(self) -> None:
        """collectstatic, then gunicorn with rlmesh_site/gunicorn_conf.py on this platform's port."""
        self.collectstatic()
        log = open(self.var / "web.log", "ab")
        self.procs["web"] = subprocess.Popen(
            [str(BIN / "gunicorn"), "-c", "python:rlmesh_site.gunicorn_conf", "rlmesh_site.asgi"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.web_answers():
                return
            time.sleep(0.2)
        raise RuntimeError("web server did not start:\n" + (self.var / "web.log").read_text()[-3000:])

    def web_answers(self) -> bool:
        """Whether gunicorn answers HTTP on its port at all (behind a TLS proxy setting it answers 301)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
        try:
            conn.request("GET", "/v1/info")
            conn.getresponse().read()
            return True
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    def start_worker(self, hostname: str | None = None, concurrency: int | None = None) -> subprocess.Popen:
        """A Celery worker on both queues; ``hostname`` stands for a separate host (``RLMESH_HOSTNAME``: its shards
        are claimed as ``<hostname>:<pid>``); concurrency defaults to the host's cores, as deployed."""
        self.worker_count += 1
        log = open(self.var / f"worker{self.worker_count}.log", "ab")
        env = {**self.env, **({"RLMESH_HOSTNAME": hostname} if hostname else {})}
        proc = subprocess.Popen(
            [str(BIN / "celery"), "-A", "rlmesh_site", "worker", "-Q", "shards,maintenance",
             *(["-c", str(concurrency)] if concurrency else []),
             "-n", f"live{self.worker_count}@{hostname or '%h'}", "-l", "info"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.procs["worker"] = self.procs[f"worker{self.worker_count}"] = proc
        logfile = self.var / f"worker{self.worker_count}.log"
        deadline = time.monotonic() + 60
        while b" ready." not in logfile.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("worker did not start:\n" + logfile.read_text()[-3000:])
            time.sleep(0.2)
        return proc

    def start_beat(self) -> subprocess.Popen:
        """The one ``celery beat`` of the deployment (the periodic reaper)."""
        log = open(self.var / "beat.log", "ab")
        self.procs["beat"] = subprocess.Popen(
            [str(BIN / "celery"), "-A", "rlmesh_site", "beat", "-l", "info", "-s", str(self.var / "celerybeat-schedule")],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        return self.procs["beat"]

    def servers_of(self) -> dict[str, set[int]]:
        """``{worker name: pids of the rlmesh.serve servers its pool runs}`` for this platform's workers: a server
        descends from a pool process (directly, or through that process's forkserver), which shares its worker's
        process group (other platforms on the machine are left out)."""
        pids = subprocess.run(["pgrep", "-f", "rlmesh.serve"], capture_output=True, text=True).stdout.split()
        workers = {proc.pid: name for name, proc in self.procs.items() if name.startswith("worker") and name != "worker"}
        found: dict[str, set[int]] = {}
        for pid in pids:
            ancestor = int(pid)
            for _ in range(4):  # server → (forkserver →) pool process
                try:
                    ancestor = int(Path(f"/proc/{ancestor}/stat").read_text().rsplit(")", 1)[1].split()[1])
                    group = os.getpgid(ancestor)
                except (OSError, ValueError, IndexError):
                    break
                if group in workers:
                    found.setdefault(workers[group], set()).add(int(pid))
                    break
        return found

    def worker_of_servers(self) -> str:
        """The name (in ``procs``) of the worker whose pool runs an ``rlmesh.serve`` server right now."""
        found = self.servers_of()
        if not found:
            raise LookupError("no worker of this platform runs a server")
        return next(iter(found))

    def kill_worker(self, name: str = "worker") -> None:
        """SIGKILL a worker's whole process group (main process and pool)."""
        proc = self.procs.pop(name)
        for key in [k for k, p in self.procs.items() if p is proc]:
            self.procs.pop(key)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def api(self, path: str):
        req = urllib.request.Request(f"{self.url}{path}", headers={"Authorization": f"Bearer {self.api_key}"})
        return json.load(urllib.request.urlopen(req, timeout=30))

    def episodes(self, eval_id: str) -> list[dict]:
        """Every episode record of an evaluation, following ``nextCursor`` through the pages."""
        items, cursor = [], None
        while True:
            page = self.api(f"/v1/evaluations/{eval_id}/episodes?limit=1000" + (f"&cursor={cursor}" if cursor else ""))
            items += page["items"]
            cursor = page["nextCursor"]
            if not cursor:
                return items

    def run(self, body: dict, poll: float = 1.0) -> dict:
        """Submit ``body`` with the official CLI and wait for it to end: ``{"id", "evaluation" (its final record),
        "wallSeconds" (submit → ended), "items" (its episodes by index), "metrics"}``."""
        t0 = time.monotonic()
        r = self.cli("eval", "submit", "-", "--json", stdin=json.dumps(body))
        if r.returncode != 0:
            raise RuntimeError(f"submit failed: {r.stderr}")
        eval_id = json.JSONDecoder().raw_decode(r.stdout)[0]["id"]
        while (e := self.api(f"/v1/evaluations/{eval_id}"))["status"] not in ("completed", "failed", "cancelled"):
            time.sleep(poll)
        wall = time.monotonic() - t0
        return {"id": eval_id, "evaluation": e, "wallSeconds": wall,
                "items": sorted(self.episodes(eval_id), key=lambda i: i["index"]),
                "metrics": self.api(f"/v1/evaluations/{eval_id}/metrics")}

    def cancel_unfinished(self) -> list[str]:
        """Cancel every queued or running evaluation of the demo org (after a test, so a failed one does not go on
        loading the host under the tests after it); returns their ids. Best effort: a platform that does not answer
        is left as it is."""
        cancelled = []
        try:
            page = self.api("/v1/evaluations?status=queued&status=running&limit=100")
            for item in page["items"]:
                req = urllib.request.Request(
                    f"{self.url}/v1/evaluations/{item['id']}/cancellations", data=b"{}", method="POST",
                    headers={"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"})
                urllib.request.urlopen(req, timeout=30).read()
                cancelled.append(item["id"])
        except (OSError, ValueError, KeyError):
            pass
        return cancelled

    def cli(self, *args: str, stdin: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
        env = {**self.env, "RLMESH_API_KEY": self.api_key, "RLMESH_PLATFORM_URL": self.url,
               "RLMESH_CONFIG_DIR": str(self.var / "cli-config"), "RLMESH_DATA_DIR": str(self.var / "cli-data")}
        return subprocess.run([str(BIN / "rlmesh"), *args], cwd=ROOT, env=env, input=stdin, capture_output=True,
                              text=True, timeout=timeout)

    def stop(self) -> None:
        if self in STARTED:
            STARTED.remove(self)
        for proc in {id(p): p for p in self.procs.values()}.values():
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=3)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


    def prepare(self) -> LivePlatform:
        """Migrate and seed a demo org and its API key (``self.api_key``)."""
        self.manage("migrate", "-v0")
        self.api_key = json.loads(self.manage("seed_demo"))["apiKey"]
        STARTED.append(self)
        return self

    def start(self) -> LivePlatform:
        """Migrate, seed a demo org and API key, start the web server and one worker."""
        self.prepare()
        self.start_web()
        self.start_worker()
        return self


def wait_for(predicate, timeout: float = 300, interval: float = 0.5):
    """Poll ``predicate`` until it returns something truthy (returned); AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")
