"""Shared fixtures: two organizations (A and B), a member of each, keys with several roles."""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from evaluations.choices import Role
from evaluations.models import ApiKey, Membership, Organization, WorkerProcess

os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")
# Every live platform the suite starts migrates a fresh database: they share this process's describe cache, so the
# catalog's envelopes (LIBERO's builds its scene, ~20 s) are described once per code change, not once per platform.
if settings.RLMESH_DESCRIBE_CACHE_DIR:
    os.environ.setdefault("RLMESH_DESCRIBE_CACHE_DIR", str(settings.RLMESH_DESCRIBE_CACHE_DIR))


@pytest.fixture(autouse=True)
def _shard_loop_heartbeat_slowed(monkeypatch):
    """Shards run inline in tests: their heartbeat thread beats once an hour, not every 10 s, so none outlives the test
    (and its database) that started it."""
    from evaluations.runs import loop

    monkeypatch.setattr(loop, "HEARTBEAT_SECONDS", 3600)


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Rate-limit counters live in the cache: every test starts with none spent."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _fast_hashers(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.RLMESH_RUN_DIR = tmp_path / "run"
    settings.MEDIA_ROOT = tmp_path / "media"  # videos and imported media never land in the checkout


def make_org(slug: str) -> Organization:
    return Organization.objects.create(slug=slug, name=f"Org {slug.upper()}")


def make_user(username: str, org: Organization, role: str = Role.MEMBER):
    user = get_user_model().objects.create_user(username=username, password="pw-" + username)
    Membership.objects.create(user=user, organization=org, role=role)
    return user


def make_api_key(org: Organization, user=None, role: str = Role.MEMBER, **kwargs) -> tuple[str, ApiKey]:
    return ApiKey.issue(organization=org, user=user, name=f"{role} key", role=role, **kwargs)


class Tenant:
    def __init__(self, slug: str):
        self.org = make_org(slug)
        self.user = make_user(f"alice-{slug}", self.org, Role.OWNER)
        self.key, self.api_key = make_api_key(self.org, self.user, Role.MEMBER)
        self.viewer_key, _ = make_api_key(self.org, self.user, Role.VIEWER)

    def client(self, key: str | None = None) -> APIClient:
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {key or self.key}")
        return c


@pytest.fixture
def ratelimit_clock(monkeypatch):
    """Stop django-ratelimit's clock (at a minute's start, or where the test sets it: ``ratelimit_clock(epoch_s)``).
    It counts in fixed windows: on a loaded host a test whose requests straddled a window's end saw its count start
    again, a 200 or 401 where a 429 was due."""
    import types

    import django_ratelimit.core

    clock = {"now": 6_000_000 * 60.0}
    monkeypatch.setattr(django_ratelimit.core, "time", types.SimpleNamespace(time=lambda: clock["now"]))

    def set_to(now: float) -> None:
        clock["now"] = float(now)

    return set_to


@pytest.fixture
def tenant_a(db) -> Tenant:
    return Tenant("a")


@pytest.fixture
def tenant_b(db) -> Tenant:
    return Tenant("b")


@pytest.fixture
def live_worker(db) -> WorkerProcess:
    """A worker pool process that has just announced itself (so plans do not warn that none is running)."""
    return WorkerProcess.objects.create(identity="testhost:1", hostname="testhost", pid=1)


@pytest.fixture
def api(tenant_a) -> APIClient:
    return tenant_a.client()


CARTPOLE_TASK = {"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 3}


def cartpole_request(**overrides) -> dict:
    body = {"models": [{"model": "prebuilt/classic-control-heuristics"}], "tasks": [dict(CARTPOLE_TASK)]}
    body.update(overrides)
    return body


@pytest.fixture(scope="session")
def live(tmp_path_factory):
    """A real platform (web server + Celery worker on a temp SQLite database), shared by live and browser tests."""
    from tests.support.agents import agent_env
    from tests.support.live import LivePlatform

    platform = LivePlatform(tmp_path_factory.mktemp("live"), **agent_env())
    try:
        yield platform.start()
    finally:
        platform.stop()


@pytest.fixture(scope="session")
def live_pg(tmp_path_factory):
    """The same platform as deployed at scale: PostgreSQL and Redis (started here on private ports), gunicorn, three
    Celery workers standing for three hosts (``host-a``…``host-c``) and one beat."""
    from tests.support.services import scaled_platform, services_available

    problem = services_available()
    if problem:
        pytest.fail(problem)
    with scaled_platform(tmp_path_factory.mktemp("live-pg"), ("host-a", "host-b", "host-c"), beat=True) as platform:
        yield platform


@pytest.fixture(autouse=True)
def _cancel_left_running(request):
    """After a test that used a live platform, cancel what it left queued or running on every platform started so
    far (a test that failed while waiting leaves its evaluation going), so the next test does not share the host
    with it."""
    yield
    if {"live", "live_pg", "platform"} & set(request.fixturenames):
        from tests.support.live import STARTED

        for platform in STARTED:
            platform.cancel_unfinished()


@pytest.fixture(params=["sqlite", "postgres"])
def platform(request):
    """An end-to-end test runs on both setups: the embedded default and PostgreSQL + Redis with three workers."""
    return request.getfixturevalue("live" if request.param == "sqlite" else "live_pg")


#: Minutes the simulator-heavy tests (marker ``slow``) may take in all on a quiet 2-core machine
#: (docs/working/tests.md): they share the suite's 45-minute figure with everything else.
SLOW_BUDGET_MINUTES = float(os.environ.get("RLMESH_SLOW_BUDGET_MINUTES", "20"))
_slow_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if "slow" in report.keywords:
        _slow_seconds[report.nodeid] = _slow_seconds.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    """One line after the run: what the ``slow`` tests took of their budget (printed, never a failure: a loaded
    host is slower, and a timed assertion would fail right work)."""
    if not _slow_seconds:
        return
    minutes = sum(_slow_seconds.values()) / 60
    over = f"; OVER BUDGET by {minutes - SLOW_BUDGET_MINUTES:.1f} min" if minutes > SLOW_BUDGET_MINUTES else ""
    terminalreporter.write_line(f"slow tests (LIBERO, Meta-World, SmolVLA): {len(_slow_seconds)} took {minutes:.1f} min "
                                f"of their {SLOW_BUDGET_MINUTES:g}-minute budget{over}")
