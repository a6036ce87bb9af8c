"""Create (or reuse) the demo organization and user, and issue a fresh API key for them."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from evaluations.choices import Role
from evaluations.models import ApiKey, Membership, Organization


class Command(BaseCommand):
    help = "Create the demo organization, user (demo / demo-password) and a new API key; print them as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--org", default="demo")
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo-password")

    def handle(self, *args, org, username, password, **options):
        organization, _ = Organization.objects.get_or_create(slug=org, defaults={"name": f"{org.title()} Lab"})
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username, defaults={"email": f"{username}@example.com"})
        if created or not user.has_usable_password():
            user.set_password(password)
            user.save()
        Membership.objects.get_or_create(user=user, organization=organization, defaults={"role": Role.OWNER})
        plaintext, _ = ApiKey.issue(organization=organization, user=user, name="demo key", role=Role.OWNER)
        self.stdout.write(
            json.dumps({"organization": organization.slug, "username": username, "password": password, "apiKey": plaintext})
        )
