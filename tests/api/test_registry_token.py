"""GET /v1/registry/token: the registry's token service grants an API key no more than its creator may do now."""

from __future__ import annotations

import base64

import jwt
import pytest

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


# Repository names in the distribution reference grammar: path components [a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*
# joined by "/", at most 255 characters in all. "{ns}" is the caller's own namespace.
VALID_NAMES = [
    "{ns}/policy", "{ns}/a", "{ns}/smolvla/libero", "{ns}/my.policy", "{ns}/my_policy", "{ns}/my__policy",
    "{ns}/my-policy", "{ns}/my---policy", "{ns}/v1.2.3", "{ns}/0", "{ns}/{fill_to_255}",
]
INVALID_NAMES = [
    "{ns}/../other/x", "{ns}/./x", "{ns}/..", "{ns}//x", "{ns}/", "{ns}/x/", "/{ns}/x", "{ns}/X", "{ns}/Policy",
    "{ns}/-x", "{ns}/x-", "{ns}/.x", "{ns}/x.", "{ns}/_x", "{ns}/x_", "{ns}/a..b", "{ns}/a___b", "{ns}/a._b",
    "{ns}/a b", "{ns}/a%2fb", "{ns}/a\\b", "{ns}/a:b", "{ns}/a@sha256", "{ns}/é", "{ns}/a\tb",
    "{ns}/{fill_to_256}",
]


def _token_for(client, key: str, name: str):
    basic = base64.b64encode(f"anyone:{key}".encode()).decode()
    return client.get("/v1/registry/token", {"service": "rlmesh-registry", "scope": f"repository:{name}:pull,push"},
                      HTTP_AUTHORIZATION=f"Basic {basic}")


def _access(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return jwt.decode(response.json()["token"], options={"verify_signature": False})["access"]


def _name(template: str, ns: str) -> str:
    return template.format(ns=ns, fill_to_255="a" * (255 - len(ns) - 1), fill_to_256="a" * (256 - len(ns) - 1))


@pytest.mark.parametrize("name", VALID_NAMES)
def test_a_valid_repository_name_in_the_own_namespace_is_granted(client, tenant_a, name):
    key, _ = make_api_key(tenant_a.org, tenant_a.user, Role.ADMIN)
    name = _name(name, tenant_a.org.slug)
    assert _access(_token_for(client, key, name)) == [{"type": "repository", "name": name, "actions": ["pull", "push"]}]


@pytest.mark.parametrize("name", INVALID_NAMES)
def test_a_name_outside_the_reference_grammar_is_granted_nothing(client, tenant_a, name):
    key, _ = make_api_key(tenant_a.org, tenant_a.user, Role.ADMIN)
    assert _access(_token_for(client, key, _name(name, tenant_a.org.slug))) == []


def test_a_push_event_for_a_name_outside_the_grammar_is_not_recorded(tenant_a):
    from evaluations.models import ImageRepository
    from evaluations.services.registry import record_push

    event = {"action": "push", "target": {"mediaType": "application/vnd.oci.image.manifest.v1+json",
             "repository": f"{tenant_a.org.slug}/../x", "digest": "sha256:" + "0" * 64, "tag": "latest"}}
    assert record_push(event) is None
    assert not ImageRepository.objects.filter(namespace=tenant_a.org.slug).exists()
