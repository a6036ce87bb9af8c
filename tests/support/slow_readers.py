"""Slow readers of a large download on a live platform, and the latency of other requests meanwhile: shared by
``tests/live/test_slow_downloads.py`` and ``bench/bench_slow_readers.py`` (issue 33)."""

from __future__ import annotations

import json
import socket
import statistics
import threading
import time
import urllib.request
from dataclasses import dataclass, field

#: Seeds, in the platform's own database, a ready dataset export of ``size`` random bytes on the evaluation
#: ``public_id`` of the demo organization, ``callers`` viewer keys of that organization, and another organization
#: with a key of its own; prints their ids and keys as JSON.
SEED = """
import json, os
from django.core.files.base import ContentFile
from evaluations.choices import Role
from evaluations.models import ApiKey, DatasetExport, Evaluation, Organization
evaluation = Evaluation.objects.get(public_id={public_id!r})
export = DatasetExport.objects.create(evaluation=evaluation, status="ready", meta={{"images": "image", "bytes": {size}}})
export.file.save("slow-readers.zip", ContentFile(os.urandom({size})))
keys = [ApiKey.issue(organization=evaluation.organization, user=None, name=f"reader {{i}}", role=Role.VIEWER)[0]
        for i in range({callers})]
other, _ = Organization.objects.get_or_create(slug="other-readers", defaults={{"name": "Other"}})
other_key = ApiKey.issue(organization=other, user=None, name="other", role=Role.VIEWER)[0]
print(json.dumps({{"keys": keys, "other": other_key}}))
"""


def submit_and_wait(platform, timeout: float = 300) -> str:
    """A one-episode CartPole evaluation of the demo organization, run to its end; its id."""
    body = json.dumps({"model": "prebuilt/random", "tasks": [
        {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 1, "maxSteps": 5}]}).encode()
    req = urllib.request.Request(f"{platform.url}/v1/evaluations", data=body, method="POST", headers={
        "Authorization": f"Bearer {platform.api_key}", "Content-Type": "application/json"})
    public_id = json.load(urllib.request.urlopen(req, timeout=60))["id"]
    deadline = time.monotonic() + timeout
    while platform.api(f"/v1/evaluations/{public_id}")["status"] not in ("completed", "failed", "cancelled"):
        if time.monotonic() > deadline:
            raise AssertionError(f"{public_id} did not end")
        time.sleep(0.5)
    return public_id


def seed(platform, public_id: str, *, size: int, callers: int) -> dict:
    """:data:`SEED` run on ``platform``: ``{"keys": [...], "other": key}``."""
    out = platform.manage("shell", "-c", SEED.format(public_id=public_id, size=size, callers=callers))
    return json.loads(out.strip().splitlines()[-1])


@dataclass(eq=False)
class SlowReader(threading.Thread):
    """One download read at ``rate`` bytes per second (1 KiB at a time) over a raw socket, until ``stop`` is set;
    ``status`` is the HTTP status line's code, ``read`` the bytes read."""

    port: int
    path: str
    key: str
    rate: float = 20_000
    stop: threading.Event = field(default_factory=threading.Event)
    status: int | None = None
    read: int = 0

    def __post_init__(self):
        super().__init__(daemon=True)

    def run(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the server's writes back up at once
            sock.sendall(f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.key}\r\n"
                         "Connection: close\r\n\r\n".encode())
            head = sock.recv(1024)
            self.status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
            self.read = len(head)
            while not self.stop.is_set():
                data = sock.recv(1024)
                if not data:
                    return
                self.read += len(data)
                time.sleep(1024 / self.rate)


def latency(url: str, headers: dict | None = None, timeout: float = 30) -> tuple[int, float]:
    """``(status, seconds)`` of one GET."""
    t0 = time.perf_counter()
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    return status, time.perf_counter() - t0


def start_readers(platform, path: str, keys: list[str], per_key: int, rate: float = 20_000) -> list[SlowReader]:
    """``per_key`` slow readers of ``path`` for each key, started and given a second to fill their buffers."""
    readers = [SlowReader(platform.port, path, key, rate) for key in keys for _ in range(per_key)]
    for reader in readers:
        reader.start()
    time.sleep(1.0)
    return readers


def probe(platform, other_key: str, rounds: int = 10) -> dict:
    """Latencies (ms) of the sign-in page and another organization's ``/v1/info``: ``{"login": [...], "info":
    [...]}``, with their statuses checked (200)."""
    out = {"login": [], "info": []}
    for _ in range(rounds):
        for name, url, headers in (("login", f"{platform.url}/accounts/login/", {}),
                                   ("info", f"{platform.url}/v1/info", {"Authorization": f"Bearer {other_key}"})):
            status, seconds = latency(url, headers)
            assert status == 200, (name, status)
            out[name].append(seconds * 1000)
    return out


def summary(ms: list[float]) -> str:
    """``p50 … ms, max … ms``."""
    return f"p50 {statistics.median(ms):.1f} ms, max {max(ms):.1f} ms"
