"""Organizations, memberships and API keys."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from ..choices import Role, lesser_role
from .key_lookup import keys_with_prefix

__all__ = ["ApiKey", "Membership", "Organization"]

API_KEY_PREFIX = "rlm_"
_UNKNOWN = object()
API_KEY_LOOKUP_LENGTH = 8


def _new_provider_id() -> str:
    return "org_" + secrets.token_hex(8)


class Organization(models.Model):
    """A tenant. Its ``slug`` is its registry namespace; ``provider_id`` is the id clients show and switch on."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=64, unique=True)
    provider_id = models.CharField(max_length=64, unique=True, default=_new_provider_id)
    created_at = models.DateTimeField(default=timezone.now)
    #: Bytes of episode media (recorded and imported videos) stored for this organization, counted against
    #: ``RLMESH_ORG_STORAGE_QUOTA_BYTES``.
    storage_bytes = models.BigIntegerField(default=0)
    #: Standard Webhooks signing secret (``whsec_…``) of the organization's run webhooks; made on first use,
    #: shown and rotated in Settings (evaluations.webhooks).
    webhook_secret = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def storage_left(self) -> int:
        """Bytes of media the organization may still store (≤ 0 when the quota is used up)."""
        used = Organization.objects.filter(pk=self.pk).values_list("storage_bytes", flat=True).first() or 0
        return settings.RLMESH_ORG_STORAGE_QUOTA_BYTES - used

    def add_storage(self, nbytes: int) -> None:
        """Count ``nbytes`` more of stored media (an atomic UPDATE)."""
        if nbytes:
            Organization.objects.filter(pk=self.pk).update(storage_bytes=models.F("storage_bytes") + int(nbytes))


class Membership(models.Model):
    """A user's role in an organization."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["organization", "user"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "organization"],
                name="evaluations_membership_unique_user_org",
                violation_error_message="The user is already a member of this organization.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} ({self.role})"


def hash_api_key(key: str) -> str:
    """Return the hex HMAC-SHA256 of ``key`` under ``settings.API_KEY_PEPPER`` (never SECRET_KEY)."""
    return hmac.new(settings.API_KEY_PEPPER.encode(), key.encode(), hashlib.sha256).hexdigest()


class ApiKeyQuerySet(models.QuerySet):
    def for_key(self, key: str) -> ApiKey | None:
        """Return the key matching the plaintext ``key`` (prefix lookup, constant-time compare), else None; revoked
        and expired keys too (``is_usable`` tells). It comes with its organization and creator loaded and its
        creator's current role known, so ``effective_role()`` costs no query: one statement in all
        (``key_lookup.keys_with_prefix``)."""
        if not key.startswith(API_KEY_PREFIX) or len(key) < len(API_KEY_PREFIX) + API_KEY_LOOKUP_LENGTH + 16:
            return None
        prefix = key[len(API_KEY_PREFIX) : len(API_KEY_PREFIX) + API_KEY_LOOKUP_LENGTH]
        digest = hash_api_key(key)
        for candidate in keys_with_prefix(self.db, prefix):
            if hmac.compare_digest(candidate.hashed, digest):
                return candidate
        return None


class ApiKey(models.Model):
    """A bearer credential for one organization, stored as an 8-character lookup prefix plus an HMAC.

    The plaintext (``rlm_<prefix><secret>``) is returned once by :meth:`issue` and never stored.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_keys")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys", null=True, blank=True
    )
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    prefix = models.CharField(max_length=API_KEY_LOOKUP_LENGTH, db_index=True)
    hashed = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({API_KEY_PREFIX}{self.prefix}…)"

    @classmethod
    def issue(
        cls, *, organization: Organization, user=None, name: str, role: str = Role.MEMBER, expires_at=None
    ) -> tuple[str, ApiKey]:
        """Create a key and return ``(plaintext, key)``; the plaintext is not recoverable afterwards."""
        plaintext = API_KEY_PREFIX + secrets.token_urlsafe(32).replace("-", "x").replace("_", "y")
        prefix = plaintext[len(API_KEY_PREFIX) : len(API_KEY_PREFIX) + API_KEY_LOOKUP_LENGTH]
        key = cls.objects.create(
            organization=organization,
            user=user,
            name=name,
            role=role,
            prefix=prefix,
            hashed=hash_api_key(plaintext),
            expires_at=expires_at,
        )
        return plaintext, key

    @property
    def is_usable(self) -> bool:
        """True unless revoked or past ``expires_at``."""
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    def effective_role(self) -> str | None:
        """The role this key acts with now: its own, capped by its creator's current role in the organization; None
        when its creator left the organization or was deactivated (the key then authenticates nowhere). Keys without
        a creator (made by an operator) keep their own role."""
        if self.user_id is None:
            return self.role
        creator_role = self.__dict__.get("creator_role", _UNKNOWN)  # known when it came from for_key
        if creator_role is _UNKNOWN:
            creator_role = (
                Membership.objects.filter(user_id=self.user_id, organization_id=self.organization_id)
                .values_list("role", flat=True).first()
            )
        if creator_role is None or not self.user.is_active:
            return None
        return lesser_role(self.role, creator_role)
