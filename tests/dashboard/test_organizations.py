"""Roles, member management, invitations by link, and the sign-in rate limit."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.utils import timezone

from evaluations.choices import Role
from evaluations.models import Evaluation, Invitation, Membership
from evaluations.runs.lifecycle import create_evaluation
from evaluations.planning import plan_evaluation
from tests.conftest import cartpole_request, make_api_key, make_user

pytestmark = pytest.mark.django_db


def submit_as(user, org) -> Evaluation:
    return create_evaluation(plan=plan_evaluation(cartpole_request(), organization=org), raw_body="{}", organization=org, creator=user)


def test_members_cancel_only_their_own_admins_any(tenant_a):
    alice_member = make_user("am", tenant_a.org, Role.MEMBER)
    bob_member = make_user("bm", tenant_a.org, Role.MEMBER)
    admin = make_user("ad", tenant_a.org, Role.ADMIN)
    mine = submit_as(alice_member, tenant_a.org)
    theirs = submit_as(bob_member, tenant_a.org)
    key, _ = make_api_key(tenant_a.org, alice_member, Role.MEMBER)
    api = tenant_a.client(key)
    assert api.post(f"/v1/evaluations/{theirs.public_id}/cancellations", {}, format="json").status_code == 403
    assert api.post(f"/v1/evaluations/{mine.public_id}/cancellations", {}, format="json").status_code == 202
    web = Client()
    web.force_login(alice_member)
    assert web.post(f"/evaluations/{theirs.public_id}/cancel").status_code == 403
    assert "cancel-button" not in web.get(f"/evaluations/{theirs.public_id}").content.decode()
    web.force_login(admin)
    assert "cancel-button" in web.get(f"/evaluations/{theirs.public_id}").content.decode()
    assert web.post(f"/evaluations/{theirs.public_id}/cancel").status_code == 302
    theirs.refresh_from_db()
    assert theirs.status == "cancelled"


def test_invitation_link_for_a_new_user(tenant_a):
    admin = Client()
    admin.force_login(tenant_a.user)
    r = admin.post("/settings/invitations", {"role": "member", "email": "new@example.org"})
    link = re.search(r"(/invitations/[\w-]+)", " ".join(str(m) for m in get_messages(r.wsgi_request))).group(1)
    visitor = Client()
    page = visitor.get(link).content.decode()
    assert f"Join {tenant_a.org.name}" in page and "Create an account" in page
    r = visitor.post(link, {"username": "newbie", "password1": "a-long-pass-123", "password2": "a-long-pass-123"})
    assert r.status_code == 302 and r["Location"] == "/evaluations"
    assert Membership.objects.get(user__username="newbie").role == "member"
    assert visitor.get(link).status_code == 404  # used once
    other = Client()
    other.force_login(make_user("late", tenant_a.org))
    assert other.post(link).status_code == 404


def test_invitations_respect_roles_and_expiry(tenant_a):
    admin_user = make_user("adm2", tenant_a.org, Role.ADMIN)
    admin = Client()
    admin.force_login(admin_user)
    r = admin.post("/settings/invitations", {"role": "owner"})
    assert "higher than your own" in " ".join(str(m) for m in get_messages(r.wsgi_request))
    assert not Invitation.objects.exists()
    member = Client()
    member.force_login(make_user("mm", tenant_a.org, Role.MEMBER))
    assert member.post("/settings/invitations", {"role": "viewer"}).status_code == 403
    from evaluations.services.organizations import create_invitation

    token, inv = create_invitation(organization=tenant_a.org, actor=tenant_a.user, actor_role=Role.OWNER, role=Role.VIEWER)
    Invitation.objects.filter(pk=inv.pk).update(expires_at=timezone.now())
    assert Client().get(f"/invitations/{token}").status_code == 404
    assert Client().get("/invitations/not-a-token").status_code == 404


def test_member_management(tenant_a, tenant_b):
    owner = Client()
    owner.force_login(tenant_a.user)
    member = make_user("joe", tenant_a.org, Role.MEMBER)
    m = Membership.objects.get(user=member)
    owner.post(f"/settings/members/{m.pk}", {"role": "admin"})
    m.refresh_from_db()
    assert m.role == "admin"
    # the last owner can be neither demoted nor removed
    own = Membership.objects.get(user=tenant_a.user, organization=tenant_a.org)
    r = owner.post(f"/settings/members/{own.pk}", {"role": "member"})
    assert "at least one owner" in " ".join(str(x) for x in get_messages(r.wsgi_request))
    own.refresh_from_db()
    assert own.role == "owner"
    # an admin cannot touch an owner; another org's member is a 404
    admin = Client()
    admin.force_login(member)
    admin.post(f"/settings/members/{own.pk}", {"action": "remove"})
    assert Membership.objects.filter(pk=own.pk).exists()
    b_member = Membership.objects.get(user=tenant_b.user)
    assert owner.post(f"/settings/members/{b_member.pk}", {"action": "remove"}).status_code == 404
    owner.post(f"/settings/members/{m.pk}", {"action": "remove"})
    assert not Membership.objects.filter(pk=m.pk).exists()
    viewer = Client()
    viewer.force_login(make_user("vv", tenant_a.org, Role.VIEWER))
    assert viewer.post(f"/settings/members/{own.pk}", {"action": "remove"}).status_code == 403


@pytest.mark.usefixtures("ratelimit_clock")  # fixed windows: the five requests stay in one
def test_sign_in_is_rate_limited(db, settings):
    from django.core.cache import cache

    settings.RATELIMIT_LOGIN = "3/m"
    cache.clear()
    c = Client()
    codes = [c.post("/accounts/login/", {"username": "x", "password": "y"}).status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
    cache.clear()


def test_a_link_to_another_of_my_organizations_switches_to_it(tenant_a, tenant_b):
    Membership.objects.create(user=tenant_a.user, organization=tenant_b.org, role=Role.MEMBER)
    theirs = submit_as(tenant_b.user, tenant_b.org)
    web = Client()
    web.force_login(tenant_a.user)
    r = web.get(f"/evaluations/{theirs.public_id}")
    assert r.status_code == 200 and f"Switched to {tenant_b.org.name}" in r.content.decode()
    assert theirs.public_id in web.get("/evaluations").content.decode()  # now the active organization


def test_without_an_organization_pages_say_what_to_do(db):
    from django.contrib.auth import get_user_model

    lonely = get_user_model().objects.create_user("lonely", password="pw")
    web = Client()
    web.force_login(lonely)
    for url in ("/evaluations", "/settings", "/compare", "/images"):
        r = web.get(url)
        assert r.status_code == 403 and "invitation link" in r.content.decode(), url


def test_viewers_are_not_offered_what_they_cannot_do(tenant_a):
    evaluation = submit_as(tenant_a.user, tenant_a.org)
    web = Client()
    web.force_login(make_user("vee", tenant_a.org, Role.VIEWER))
    page = web.get(f"/evaluations/{evaluation.public_id}").content.decode()
    assert ">Launch</a>" not in page and "run-again-top" not in page and "cancel-button" not in page
    r = web.post(f"/evaluations/{evaluation.public_id}/cancel")
    assert r.status_code == 403 and r.content == b"viewers cannot cancel evaluations"
    key, _ = make_api_key(tenant_a.org, Membership.objects.get(user__username="vee").user, Role.VIEWER)
    assert tenant_a.client(key).post("/v1/evaluation-previews", data=json.dumps(cartpole_request()), content_type="application/json").status_code == 200


def test_only_owners_revoke_owner_keys_and_keys_show_their_effective_role(tenant_a):
    owner_key_plain, owner_key = make_api_key(tenant_a.org, tenant_a.user, Role.OWNER)
    admin_user = make_user("adm3", tenant_a.org, Role.ADMIN)
    _, capped = make_api_key(tenant_a.org, admin_user, Role.ADMIN)
    Membership.objects.filter(user=admin_user).update(role=Role.VIEWER)
    web = Client()
    web.force_login(make_user("adm4", tenant_a.org, Role.ADMIN))
    assert web.post(f"/settings/api-keys/{owner_key.pk}/revoke").status_code == 403
    owner_key.refresh_from_db()
    assert owner_key.revoked_at is None
    row = web.get("/settings").content.decode().split(f'id="key-{capped.pk}"')[1].split("</tr>")[0]
    assert "<td>viewer <span" in row and "capped by its creator" in row
    Membership.objects.filter(user=admin_user).delete()
    row = web.get("/settings").content.decode().split(f'id="key-{capped.pk}"')[1].split("</tr>")[0]
    assert "inactive: creator left" in row
