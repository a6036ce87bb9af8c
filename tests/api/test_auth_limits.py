"""Guessing credentials is rate limited per address everywhere: /v1 bearer tokens, the registry's Basic login and the
admin's sign-in form."""

from __future__ import annotations

import base64

import pytest
from rest_framework.test import APIClient


@pytest.fixture
def two_failures(settings):
    settings.RATELIMIT_AUTH_FAILURES = "2/m"
    settings.RATELIMIT_LOGIN = "2/m"


def test_failed_bearer_authentications_end_in_429_even_for_a_good_key(tenant_a, two_failures):
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Bearer rlm_" + "x" * 40)
    assert [bad.get("/v1/evaluations").status_code for _ in range(3)] == [401, 401, 429]
    blocked = tenant_a.client().get("/v1/evaluations")
    assert blocked.status_code == 429 and blocked.json()["error"]["code"] == "throttled" and blocked["Retry-After"] == "60"
    assert blocked.json()["error"]["message"] == ("too many failed authentications from this address. "
                                                  "Expected available in 60 seconds.")
    other_address = tenant_a.client().get("/v1/evaluations", REMOTE_ADDR="10.0.0.7")
    assert other_address.status_code == 200


def test_failed_registry_logins_end_in_429(client, tenant_a, two_failures):
    basic = base64.b64encode(b"someone:rlm_" + b"y" * 40).decode()
    codes = [client.get("/v1/registry/token?service=rlmesh-registry", HTTP_AUTHORIZATION=f"Basic {basic}").status_code
             for _ in range(3)]
    assert codes == [401, 401, 429]


@pytest.mark.django_db
def test_the_admin_sign_in_form_is_rate_limited(client, two_failures):
    codes = [client.post("/admin/login/", {"username": "root", "password": "guess"}).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
