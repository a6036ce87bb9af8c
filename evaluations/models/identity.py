"""Sign-in state for the official CLI: device authorizations (RFC 8628), sessions and rotating refresh
tokens, plus organization invitations. Secrets are stored only as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from ..choices import Role
from .organizations import Organization

__all__ = ["AuthSession", "DeviceAuthorization", "Invitation", "RefreshToken", "hash_secret"]


def hash_secret(value: str) -> str:
    """Hex SHA-256 of a high-entropy secret (device codes, refresh tokens, invitation tokens)."""
    return hashlib.sha256(value.encode()).hexdigest()


#: No vowels or look-alikes, so a user code never spells a word or confuses 0/O, 1/I.
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"


def new_user_code() -> str:
    raw = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(8))
    return f"{raw[:4]}-{raw[4:]}"


class DeviceAuthorization(models.Model):
    """One RFC 8628 device authorization: pending until a signed-in user approves or denies its user code;
    an approved one is redeemable exactly once."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        DENIED = "denied"
        REDEEMED = "redeemed"

    device_code_hash = models.CharField(max_length=64, unique=True)
    user_code = models.CharField(max_length=9, unique=True, default=new_user_code)
    client_id = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    interval = models.PositiveIntegerField(default=5)
    last_polled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    #: Who asked: the requesting client's address, shown on the approval page.
    requester_ip = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"device authorization {self.user_code} ({self.status})"

    @property
    def expired(self) -> bool:
        return timezone.now() >= self.expires_at


def new_session_id() -> str:
    return "ses_" + secrets.token_hex(10)


class AuthSession(models.Model):
    """A CLI sign-in: one user, one active organization, a chain of single-use refresh tokens.

    Access tokens (JWTs) name the session in ``sid``; revoking the session (logout, or reuse of an old
    refresh token) makes every token of the chain stop working at once.
    """

    public_id = models.CharField(max_length=40, unique=True, default=new_session_id)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="auth_sessions")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    client_id = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now)
    last_refreshed_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.public_id

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class RefreshToken(models.Model):
    """One refresh token of a session; ``used_at`` set on first use. Presenting a used one revokes the session."""

    session = models.ForeignKey(AuthSession, on_delete=models.CASCADE, related_name="refresh_tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"refresh token of {self.session_id}"


class Invitation(models.Model):
    """An invitation by link to join an organization with a role; accepted once, before it expires."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True)
    email = models.EmailField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"invitation to {self.organization} as {self.role}"

    @property
    def usable(self) -> bool:
        return self.accepted_at is None and self.revoked_at is None and timezone.now() < self.expires_at
