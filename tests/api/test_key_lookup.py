"""ApiKey.objects.for_key: one statement that loads the key, its organization, its creator and the creator's current
role, giving the same instances the ORM would (values converted alike on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.forms.models import model_to_dict
from django.utils import timezone

from evaluations.choices import Role
from evaluations.models import ApiKey, Membership, Organization
from tests.conftest import make_api_key, make_user

pytestmark = pytest.mark.django_db


def fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_it_loads_what_the_orm_loads_in_one_statement(tenant_a, django_assert_num_queries):
    expiry = timezone.now() + timedelta(days=3)
    plaintext, issued = make_api_key(tenant_a.org, tenant_a.user, Role.ADMIN, expires_at=expiry)
    ApiKey.objects.filter(pk=issued.pk).update(last_used_at=timezone.now())
    with django_assert_num_queries(1):
        key = ApiKey.objects.for_key(plaintext)
        assert key.organization.slug == tenant_a.org.slug and key.user.username == tenant_a.user.username
        assert key.effective_role() == Role.ADMIN  # the creator is an owner: the key's own role holds
    assert fields(key) == fields(ApiKey.objects.get(pk=issued.pk))
    assert fields(key.organization) == fields(Organization.objects.get(pk=tenant_a.org.pk))
    assert fields(key.user) == fields(get_user_model().objects.get(pk=tenant_a.user.pk))
    assert isinstance(key.expires_at, type(expiry)) and key.expires_at == expiry
    assert key.user.is_active is True and model_to_dict(key)["organization"] == tenant_a.org.pk


def test_the_creator_role_is_read_now(tenant_a):
    creator = make_user("bob", tenant_a.org, Role.ADMIN)
    plaintext, _ = make_api_key(tenant_a.org, creator, Role.ADMIN)
    assert ApiKey.objects.for_key(plaintext).effective_role() == Role.ADMIN
    Membership.objects.filter(user=creator).update(role=Role.VIEWER)
    assert ApiKey.objects.for_key(plaintext).effective_role() == Role.VIEWER
    Membership.objects.filter(user=creator).delete()
    assert ApiKey.objects.for_key(plaintext).effective_role() is None
    Membership.objects.create(user=creator, organization=tenant_a.org, role=Role.MEMBER)
    get_user_model().objects.filter(pk=creator.pk).update(is_active=False)
    assert ApiKey.objects.for_key(plaintext).effective_role() is None


def test_an_operator_key_and_unknown_keys(tenant_a, tenant_b):
    plaintext, _ = make_api_key(tenant_a.org, None, Role.VIEWER)
    key = ApiKey.objects.for_key(plaintext)
    assert key.user is None and key.effective_role() == Role.VIEWER
    assert ApiKey.objects.for_key(plaintext[:-1] + ("x" if plaintext[-1] != "x" else "y")) is None
    assert ApiKey.objects.for_key("rlm_short") is None
    # The creator's membership in another organization does not count for this organization's key.
    Membership.objects.create(user=tenant_a.user, organization=tenant_b.org, role=Role.VIEWER)
    assert ApiKey.objects.for_key(tenant_a.key).effective_role() == Role.MEMBER


def test_the_401_says_why_the_creator_no_longer_counts(tenant_a):
    from rest_framework.test import APIClient

    creator = make_user("carol", tenant_a.org, Role.ADMIN)
    plaintext, _ = make_api_key(tenant_a.org, creator, Role.MEMBER)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    get_user_model().objects.filter(pk=creator.pk).update(is_active=False)
    r = client.get("/v1/me")
    assert r.status_code == 401 and r.json()["error"]["message"] == "API key's creator is deactivated"
    get_user_model().objects.filter(pk=creator.pk).update(is_active=True)
    Membership.objects.filter(user=creator).delete()
    r = client.get("/v1/me")
    assert r.status_code == 401 and "no longer a member" in r.json()["error"]["message"]
