"""One sign-in limit per address (``RATELIMIT_AUTH_FAILURES`` failures a window, one counter in the shared cache)
covers every way to present a password or a key: the dashboard's and the admin's sign-in forms, API keys and
session tokens on /v1 and /agents, the registry's Basic login, and unknown device codes and refresh tokens at
/oauth/token. Once an address is over it, a password is not checked at all (429), while a key or token is: a valid
one keeps working (keys are long random strings), a bad one is answered 429."""

from __future__ import annotations

import base64

import pytest
from rest_framework.test import APIClient

from evaluations.services.identity import DEVICE_GRANT

pytestmark = pytest.mark.django_db

BAD_KEY = "Bearer rlm_" + "x" * 40


WINDOW_LEFT = 37  # seconds of the failure window left when the tests below run


@pytest.fixture
def two_failures(settings, ratelimit_clock):
    """Two failures a minute, on a clock that stands still 37 s before the test client's window ends: a Retry-After
    must say how much of the window is left."""
    import zlib

    offset = zlib.crc32(b"127.0.0.1") % 60  # where the test client's one-minute windows end (django-ratelimit)
    ratelimit_clock(6_000_000 * 60 + (offset - WINDOW_LEFT) % 60)
    settings.RATELIMIT_AUTH_FAILURES = "2/m"
    settings.RATELIMIT_LOGIN = "100/m"  # the per-form POST rate stays out of the way: the shared limit is tested


def _bad_key():
    return APIClient().get("/v1/evaluations", HTTP_AUTHORIZATION=BAD_KEY)


def _registry(client, secret: bytes):
    basic = base64.b64encode(b"someone:" + secret).decode()
    return client.get("/v1/registry/token?service=rlmesh-registry", HTTP_AUTHORIZATION=f"Basic {basic}")


def _login(client, path: str, password: str):
    return client.post(path, {"username": "alice-a", "password": password})


def test_bad_keys_end_in_429_but_a_valid_key_from_the_same_address_keeps_working(tenant_a, two_failures):
    assert [_bad_key().status_code for _ in range(3)] == [401, 401, 429]
    throttled = _bad_key()
    assert throttled.status_code == 429 and throttled.json()["error"]["code"] == "throttled" and throttled["Retry-After"] == "37"
    assert throttled.json()["error"]["message"] == ("too many failed authentications from this address. "
                                                    "Expected available in 37 seconds.")
    assert tenant_a.client().get("/v1/evaluations").status_code == 200
    assert tenant_a.client().get("/agents/evaluations").status_code == 200
    assert _bad_key().status_code == 429  # a valid key resets nothing: bad ones from the address are still slowed
    assert APIClient().get("/v1/evaluations", HTTP_AUTHORIZATION=BAD_KEY, REMOTE_ADDR="10.0.0.7").status_code == 401


def test_failed_registry_logins_end_in_429_and_a_valid_key_still_gets_its_token(client, tenant_a, two_failures):
    assert [_registry(client, b"rlm_" + b"y" * 40).status_code for _ in range(3)] == [401, 401, 429]
    assert _registry(client, tenant_a.key.encode()).status_code == 200


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_a_password_form_refuses_even_the_right_password_once_the_address_is_over_the_limit(client, tenant_a, two_failures, path):
    tenant_a.user.set_password("right-password")
    tenant_a.user.is_staff = True
    tenant_a.user.save()
    assert [_login(client, path, "guess").status_code for _ in range(2)] == [200, 200]  # the form again, with an error
    refused = _login(client, path, "right-password")
    assert refused.status_code == 429 and refused["Retry-After"] == "37"
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("first,then", [("/accounts/login/", "/admin/login/"), ("/admin/login/", "/accounts/login/")])
def test_the_dashboard_and_the_admin_share_one_count(client, tenant_a, two_failures, first, then):
    assert _login(client, first, "guess").status_code == 200
    assert _login(client, then, "guess").status_code == 200
    assert _login(client, first, "guess").status_code == 429
    assert _login(client, then, "guess").status_code == 429


def test_keys_and_passwords_share_one_count(client, tenant_a, two_failures):
    assert _bad_key().status_code == 401
    assert _login(client, "/admin/login/", "guess").status_code == 200
    assert _login(client, "/accounts/login/", "guess").status_code == 429
    assert _registry(client, b"rlm_" + b"z" * 40).status_code == 429


def test_unknown_device_codes_and_refresh_tokens_count_and_end_in_429(client, two_failures, settings):
    def token(**form):
        return client.post("/oauth/token", {"client_id": settings.RLMESH_CLI_CLIENT_ID, **form})

    device = {"grant_type": DEVICE_GRANT, "device_code": "guess"}
    refresh = {"grant_type": "refresh_token", "refresh_token": "guess"}
    assert [token(**device).status_code, token(**refresh).status_code] == [400, 400]
    throttled = token(**device)
    assert throttled.status_code == 429 and throttled.json()["error"] == "slow_down"
    assert _bad_key().status_code == 429  # the same count


def test_the_count_is_shared_by_separate_processes(tmp_path):
    """gunicorn runs several web processes: failures counted in one are seen by the next (the file cache under
    RLMESH_VAR_DIR/cache without Redis; Redis with CACHE_REDIS_URL)."""
    import os
    import subprocess
    import sys

    code = ("import os, sys; os.environ['DJANGO_SETTINGS_MODULE'] = 'rlmesh_site.settings'\n"
            "import django; django.setup()\n"
            "from django.test import RequestFactory\n"
            "from evaluations.auth import failed_authentication\n"
            "request = RequestFactory().post('/admin/login/', REMOTE_ADDR='10.9.8.7')\n"
            "print(failed_authentication(request, count=sys.argv[1] == 'count'))\n")
    # a day's window: three interpreter starts on a loaded host cannot cross its end (a minute's could)
    env = {**os.environ, "RLMESH_VAR_DIR": str(tmp_path), "RATELIMIT_AUTH_FAILURES": "2/d"}
    env.pop("CACHE_REDIS_URL", None)

    def run(mode: str) -> str:
        return subprocess.run([sys.executable, "-c", code, mode], env=env, capture_output=True, text=True, check=True,
                              timeout=120).stdout.strip()

    assert [run("count"), run("count"), run("check")] == ["False", "False", "True"]
