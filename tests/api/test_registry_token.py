"""GET /v1/registry/token: the registry's token service grants an API key no more than its creator may do now."""

from __future__ import annotations

import base64

import jwt

from evaluations.choices import Role
from evaluations.models import Membership
from tests.conftest import make_api_key

SCOPE = "repository:{ns}/policy:pull,push"


def _token(client, key: str, ns: str):
    basic = base64.b64encode(f"anyone:{key}".encode()).decode()
    return client.get(f"/v1/registry/token?service=rlmesh-registry&scope={SCOPE.format(ns=ns)}",
                      HTTP_AUTHORIZATION=f"Basic {basic}")


def _actions(response) -> list[str]:
    assert response.status_code == 200, response.content
    claims = jwt.decode(response.json()["token"], options={"verify_signature": False})
    return claims["access"][0]["actions"]


def test_an_admin_key_loses_push_when_its_creator_is_demoted_and_everything_when_removed(client, tenant_a):
    key, _ = make_api_key(tenant_a.org, tenant_a.user, Role.ADMIN)
    assert _actions(_token(client, key, tenant_a.org.slug)) == ["pull", "push"]
    Membership.objects.filter(user=tenant_a.user, organization=tenant_a.org).update(role=Role.VIEWER)
    assert _actions(_token(client, key, tenant_a.org.slug)) == ["pull"]
    Membership.objects.filter(user=tenant_a.user, organization=tenant_a.org).delete()
    response = _token(client, key, tenant_a.org.slug)
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Basic")


def test_a_key_of_a_deactivated_creator_is_refused(client, tenant_a):
    key, _ = make_api_key(tenant_a.org, tenant_a.user, Role.MEMBER)
    tenant_a.user.is_active = False
    tenant_a.user.save()
    assert _token(client, key, tenant_a.org.slug).status_code == 401


def test_a_key_never_reaches_another_organizations_namespace(client, tenant_a, tenant_b):
    assert _actions(_token(client, tenant_a.key, tenant_b.org.slug)) == []
