"""PostgreSQL and Redis servers the tests start themselves, on private ports in a temp dir (Debian's packages:
``postgresql``, ``redis-server``; .ci/run and ``make test`` install them). Nothing shared with the host's own
services. PostgreSQL refuses to run as root, so its cluster belongs to the ``postgres`` system user."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.support.live import LivePlatform, free_port

__all__ = ["PostgresServer", "RedisServer", "scaled_platform", "services_available"]


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def services_available() -> str | None:
    """None when PostgreSQL and Redis can be started here, else what is missing (and how to get it)."""
    missing = []
    if _pg_bin() is None:
        missing.append("postgresql")
    if shutil.which("redis-server") is None:
        missing.append("redis-server")
    if missing:
        return f"missing {', '.join(missing)}: apt-get install -y {' '.join(missing)} (make test does this as root)"
    return None


class PostgresServer:
    """A throwaway PostgreSQL cluster: ``url`` is its DATABASE_URL; ``restart()`` is ``pg_ctl restart -m fast``."""

    def __init__(self):
        self.bin = _pg_bin()
        # Its own temp dir: pytest's are private to root (0700), and the cluster runs as ``postgres``.
        self.root = Path(tempfile.mkdtemp(prefix="rlmesh-pg-"))
        self.data = self.root / "pgdata"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/rlmesh"

    def _as_postgres(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        return subprocess.run([*prefix, *cmd], check=check, capture_output=True, text=True, timeout=120)

    def _ctl(self, action: str, *extra: str) -> None:
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.root / "pg.log"),
                          "-w", *extra, action)

    def start(self) -> PostgresServer:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        if not self.data.exists():
            self._as_postgres(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
        self._ctl("start")
        self._as_postgres(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "rlmesh",
                          check=False)
        return self

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast")

    def stop(self) -> None:
        self._ctl("stop", "-m", "immediate")
        shutil.rmtree(self.root, ignore_errors=True)


class RedisServer:
    """A throwaway Redis with append-only persistence (queued messages survive a restart, as the production layout
    configures it): ``url`` is its broker URL; ``stop()``/``start()`` take it down and bring it back."""

    def __init__(self, root: Path):
        self.root = root
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        self.root.mkdir(parents=True, exist_ok=True)
        log = open(self.root / "redis.log", "ab")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.root),
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ping = subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True)
            if ping.stdout.strip() == "PONG":
                return self
            time.sleep(0.1)
        raise RuntimeError("redis did not start:\n" + (self.root / "redis.log").read_text()[-2000:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            subprocess.run(["redis-cli", "-p", str(self.port), "shutdown"], capture_output=True)
            self.proc.wait(timeout=30)
        self.proc = None

    def restart(self, down_seconds: float = 2.0) -> None:
        self.stop()
        time.sleep(down_seconds)
        self.start()


@contextmanager
def scaled_platform(root: Path, hosts: Sequence[str | None] = (), *, beat: bool = False, web: bool = True,
                    concurrency: int | None = None, **extra_env: str) -> Iterator[LivePlatform]:
    """The platform as deployed at scale, under ``root``: PostgreSQL and Redis started here on private ports
    (``platform.postgres``, ``platform.redis``), migrated and seeded (``platform.api_key``), gunicorn unless
    ``web=False``, one Celery worker per entry of ``hosts`` (a name stands for a separate host, ``None`` for this one)
    and the beat if ``beat``; ``extra_env``: settings of the web server and the workers. Everything is stopped on
    exit."""
    postgres = PostgresServer().start()
    redis = None
    platform = None
    try:
        redis = RedisServer(root / "redis").start()
        platform = LivePlatform(root / "var", **extra_env, DATABASE_URL=postgres.url, CELERY_BROKER_URL=redis.url)
        platform.postgres, platform.redis = postgres, redis
        platform.prepare()
        if web:
            platform.start_web()
        for host in hosts:
            platform.start_worker(hostname=host, concurrency=concurrency)
        if beat:
            platform.start_beat()
        yield platform
    finally:
        if platform is not None:
            platform.stop()
        if redis is not None:
            redis.stop()
        postgres.stop()
