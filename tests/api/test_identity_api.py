"""Sign-in for the official CLI: device flow, tokens, refresh rotation and reuse, /v1/me, logout."""

from __future__ import annotations

import time

import jwt
import pytest
from django.test import Client
from django.utils import timezone

from evaluations.choices import Role
from evaluations.models import AuthSession, DeviceAuthorization, Membership
from tests.conftest import make_api_key, make_user

pytestmark = pytest.mark.django_db
CLIENT_ID = "rlmesh-cli"


def form_post(client, path, **data):
    return client.post(path, data=data)  # form-encoded, like the CLI


def start(client) -> dict:
    r = form_post(client, "/oauth/device_authorization", client_id=CLIENT_ID)
    assert r.status_code == 200, r.content
    return r.json()


def approve(tenant, user_code: str, org=None, decision="approve") -> Client:
    web = Client()
    web.force_login(tenant.user)
    r = web.post("/activate", {"user_code": user_code, "decision": decision, "organization": (org or tenant.org).provider_id})
    assert r.status_code == 200
    return web


def poll(client, device_code: str):
    return form_post(client, "/oauth/token", grant_type="urn:ietf:params:oauth:grant-type:device_code", device_code=device_code, client_id=CLIENT_ID)


def sign_in(client, tenant, org=None) -> dict:
    flow = start(client)
    approve(tenant, flow["user_code"], org)
    r = poll(client, flow["device_code"])
    assert r.status_code == 200, r.content
    return r.json()


def bearer(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def test_info_advertises_sign_in_from_the_configured_base_url(client, settings):
    settings.PUBLIC_URL = "https://evals.example.org"
    auth = client.get("/v1/info", HTTP_HOST="evil.example").json()["auth"]
    assert auth == {
        "cli": {"clientId": CLIENT_ID},
        "deviceAuthorizationEndpoint": "https://evals.example.org/oauth/device_authorization",
        "tokenEndpoint": "https://evals.example.org/oauth/token",
        "issuer": "https://evals.example.org",
    }


def test_device_authorization_response_shape(client, settings):
    flow = start(client)
    assert flow["verification_uri"] == f"{settings.PUBLIC_URL}/activate"
    assert flow["verification_uri_complete"].endswith(f"?user_code={flow['user_code']}")
    assert isinstance(flow["expires_in"], int) and isinstance(flow["interval"], int)
    assert len(flow["user_code"]) == 9 and flow["user_code"][4] == "-"
    assert not DeviceAuthorization.objects.filter(device_code_hash=flow["device_code"]).exists()  # stored hashed
    r = form_post(client, "/oauth/device_authorization", client_id="someone-else")
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"


def test_pending_slow_down_then_tokens_once(client, tenant_a, settings):
    flow = start(client)
    r = poll(client, flow["device_code"])
    assert r.status_code == 400 and r.json()["error"] == "authorization_pending"
    r = poll(client, flow["device_code"])  # immediately again: faster than the interval
    assert r.json()["error"] == "slow_down"
    assert DeviceAuthorization.objects.get(user_code=flow["user_code"]).interval == settings.DEVICE_CODE_INTERVAL + 5
    approve(tenant_a, flow["user_code"].lower().replace("-", ""))  # codes are forgiving about case and dash
    tokens = poll(client, flow["device_code"]).json()
    assert set(tokens) >= {"access_token", "refresh_token", "token_type", "expires_in"}
    claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    assert isinstance(claims["exp"], int) and claims["org_id"] == tenant_a.org.provider_id
    again = poll(client, flow["device_code"])
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_denied_and_expired_codes(client, tenant_a):
    flow = start(client)
    approve(tenant_a, flow["user_code"], decision="deny")
    assert poll(client, flow["device_code"]).json()["error"] == "access_denied"
    flow = start(client)
    DeviceAuthorization.objects.filter(user_code=flow["user_code"]).update(expires_at=timezone.now())
    assert poll(client, flow["device_code"]).json()["error"] == "expired_token"
    assert poll(client, "dev_unknown").json()["error"] == "invalid_grant"
    r = form_post(client, "/oauth/token", grant_type="password", client_id=CLIENT_ID)
    assert r.json()["error"] == "unsupported_grant_type"


def test_activate_page(tenant_a, client):
    flow = start(client)
    web = Client()
    assert web.get(f"/activate?user_code={flow['user_code']}").status_code == 302  # sign in first
    web.force_login(tenant_a.user)
    page = web.get(f"/activate?user_code={flow['user_code']}").content.decode()
    assert flow["user_code"] in page and "Approve" in page and tenant_a.org.name in page
    assert web.get("/activate?user_code=ZZZZ-ZZZZ").status_code == 404
    outsider = make_user("mallory", tenant_a.org)
    Membership.objects.filter(user=outsider).delete()
    web.force_login(outsider)
    r = web.post("/activate", {"user_code": flow["user_code"], "decision": "approve", "organization": tenant_a.org.provider_id})
    assert "Choose one of your organizations" in r.content.decode()
    assert DeviceAuthorization.objects.get(user_code=flow["user_code"]).status == "pending"


def test_session_tokens_work_on_every_route(client, tenant_a):
    tokens = sign_in(client, tenant_a)
    api = bearer(tokens["access_token"])
    me = api.get("/v1/me").json()
    assert me["subject"]["id"] == f"user_{tenant_a.user.pk}" and me["organization"]["providerId"] == tenant_a.org.provider_id
    assert me["credential"] == "session" and me["role"] == "owner"
    assert api.get("/v1/evaluations").status_code == 200


def test_refresh_rotates_and_reuse_revokes_the_session(client, tenant_a):
    first = sign_in(client, tenant_a)
    r = form_post(client, "/oauth/token", grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=CLIENT_ID)
    second = r.json()
    assert r.status_code == 200 and second["refresh_token"] != first["refresh_token"]
    assert bearer(second["access_token"]).get("/v1/me").status_code == 200
    assert bearer(first["access_token"]).get("/v1/me").status_code == 200  # valid until its exp
    race = form_post(client, "/oauth/token", grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=CLIENT_ID)
    assert race.json()["error"] == "invalid_grant" and "concurrent" in race.json()["error_description"]
    assert AuthSession.objects.get().revoked_at is None  # within the grace period a reuse is a race, not theft
    from evaluations.models import RefreshToken
    RefreshToken.objects.filter(used_at__isnull=False).update(used_at=timezone.now() - timezone.timedelta(seconds=11))
    reuse = form_post(client, "/oauth/token", grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=CLIENT_ID)
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant" and "revoked" in reuse.json()["error_description"]
    assert AuthSession.objects.get().revoked_reason == "refresh token reused"
    for token in (first["access_token"], second["access_token"]):
        assert bearer(token).get("/v1/me").status_code == 401
    r = form_post(client, "/oauth/token", grant_type="refresh_token", refresh_token=second["refresh_token"], client_id=CLIENT_ID)
    assert r.json()["error"] == "invalid_grant"


def test_refresh_switches_organization_only_for_members(client, tenant_a, tenant_b):
    tokens = sign_in(client, tenant_a)
    r = form_post(client, "/oauth/token", grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=CLIENT_ID, organization_id=tenant_b.org.provider_id)
    assert r.status_code == 400 and r.json() == {"error": "invalid_grant", "error_description": f"user is not a member of {tenant_b.org.provider_id}"}
    Membership.objects.create(user=tenant_a.user, organization=tenant_b.org, role=Role.VIEWER)
    tokens = sign_in(client, tenant_a)
    r = form_post(client, "/oauth/token", grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=CLIENT_ID, organization_id=tenant_b.org.provider_id)
    switched = bearer(r.json()["access_token"])
    me = switched.get("/v1/me").json()
    assert me["organization"]["providerId"] == tenant_b.org.provider_id and me["role"] == "viewer"
    orgs = switched.get("/v1/me/organizations").json()["organizations"]
    assert [(o["providerId"], o["active"]) for o in orgs] == sorted(
        [(tenant_a.org.provider_id, False), (tenant_b.org.provider_id, True)], key=lambda p: p[0] != tenant_a.org.provider_id
    )
    assert all(o["registryNamespace"] for o in orgs)


def test_expired_and_tampered_tokens_get_401(client, tenant_a, settings):
    tokens = sign_in(client, tenant_a)
    claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    expired = jwt.encode({**claims, "exp": int(time.time()) - 1}, settings.JWT_SIGNING_KEY, algorithm="HS256")
    forged = jwt.encode(claims, "not-the-signing-key-but-32-bytes-long!", algorithm="HS256")
    other_org = jwt.encode({**claims, "org_id": "org_someoneelse"}, "not-the-signing-key-but-32-bytes-long!", algorithm="HS256")
    head, body, sig = tokens["access_token"].split(".")
    for token, reason in ((expired, "expired"), (forged, "invalid"), (other_org, "invalid"), (f"{head}.{body}x.{sig}", "invalid"), ("a.b.c", "invalid")):
        r = bearer(token).get("/v1/evaluations")
        assert r.status_code == 401 and reason in r.json()["error"]["message"]


def test_logout_revokes_and_is_idempotent(client, tenant_a):
    tokens = sign_in(client, tenant_a)
    api = bearer(tokens["access_token"])
    assert api.delete("/v1/me/session").status_code == 204
    assert api.get("/v1/me").status_code == 401
    assert api.delete("/v1/me/session").status_code == 401  # the token died with its session
    r = form_post(client, "/oauth/token", grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=CLIENT_ID)
    assert r.json()["error"] == "invalid_grant"
    assert tenant_a.client().delete("/v1/me/session").status_code == 403  # an API key has no session


def test_me_with_an_api_key(tenant_a):
    me = tenant_a.client().get("/v1/me").json()
    assert me["credential"] == "api_key" and me["organization"]["providerId"] == tenant_a.org.provider_id
    assert tenant_a.client().get("/v1/me/organizations").json()["organizations"][0]["active"] is True


def test_an_api_key_never_outranks_its_creator(tenant_a):
    member = make_user("mem", tenant_a.org, Role.MEMBER)
    key, _ = make_api_key(tenant_a.org, member, Role.OWNER)
    c = tenant_a.client(key)
    assert c.get("/v1/me").json()["role"] == "member"
    Membership.objects.filter(user=member).update(role=Role.VIEWER)
    assert c.post("/v1/evaluations", data="{}", content_type="application/json").status_code == 403
    Membership.objects.filter(user=member).delete()
    assert c.get("/v1/me").status_code == 401


@pytest.mark.usefixtures("ratelimit_clock")  # fixed windows: the five requests stay in one
def test_oauth_endpoints_are_rate_limited(client, settings):
    settings.RATELIMIT_OAUTH = "3/m"
    from django.core.cache import cache

    cache.clear()
    codes = [form_post(client, "/oauth/device_authorization", client_id=CLIENT_ID).status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
    cache.clear()


def test_a_session_can_submit_and_it_is_recorded_as_the_user(client, tenant_a):
    from evaluations.models import Evaluation
    from tests.conftest import cartpole_request
    import json

    api = bearer(sign_in(client, tenant_a)["access_token"])
    r = api.post("/v1/evaluations", data=json.dumps(cartpole_request()), content_type="application/json")
    assert r.status_code == 201
    evaluation = Evaluation.objects.get()
    assert evaluation.creator == tenant_a.user and evaluation.api_key is None


def test_oauth_endpoints_answer_json_for_anything_odd(client):
    r = client.get("/oauth/token")
    assert r.status_code == 405 and r.json()["error"] == "invalid_request"
    r = client.post("/oauth/token", data='{"grant_type": "refresh_token"}', content_type="application/json")
    assert r.status_code == 400 and "form-urlencoded" in r.json()["error_description"]
    r = form_post(client, "/oauth/token", grant_type="urn:ietf:params:oauth:grant-type:device_code", client_id=CLIENT_ID)
    assert r.json() == {"error": "invalid_request", "error_description": "missing device_code"}
    r = form_post(client, "/oauth/device_authorization")
    assert r.json()["error"] == "invalid_request"
    r = client.post("/oauth/authorize")
    assert r.status_code == 404 and r["Content-Type"] == "application/json"
    r = client.post("/oauth/token", data="x=" + "a" * 20000, content_type="application/x-www-form-urlencoded")
    assert r.status_code == 400 and "too large" in r.json()["error_description"]
