"""Sign-in for the official CLI: RFC 8628 device authorization, JWT access tokens, rotating refresh tokens.

Why by hand and not django-oauth-toolkit (which implements RFC 8628): the official CLI needs three things
DOT's models do not have. (1) ``rlmesh org switch`` sends a non-standard ``organization_id`` with the
refresh grant, so a session carries an active organization that a refresh may change. (2) Logout
(``DELETE /v1/me/session``) and refresh-token reuse must revoke one *session*: the device grant, its whole
refresh chain and every access token issued from it; DOT keeps those as unrelated rows. (3) DOT 3.4's
device polling never answers ``slow_down`` and answers an unknown device code with a non-RFC 404. What is
left is small: the token formats come from PyJWT (HS256, integer ``exp``) and ``secrets``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

import jwt
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ..models import AuthSession, DeviceAuthorization, Membership, Organization, RefreshToken
from ..models.identity import hash_secret

__all__ = [
    "OAuthError",
    "approve_device",
    "decode_access_token",
    "deny_device",
    "redeem_device_code",
    "refresh_session",
    "revoke_session",
    "start_device_authorization",
]

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
#: A used refresh token presented again within this many seconds is a race, not theft.
REFRESH_REUSE_GRACE_SECONDS = 10


class OAuthError(Exception):
    """An RFC 6749/8628 error: rendered as HTTP 400 ``{"error", "error_description"}``. ``unknown_credential``: the
    device code or refresh token matched nothing (a guess, counted by the sign-in limit), not a known one misused."""

    def __init__(self, error: str, description: str = "", status: int = 400, *, unknown_credential: bool = False):
        super().__init__(description or error)
        self.error = error
        self.description = description
        self.status = status
        self.unknown_credential = unknown_credential


def check_client(client_id: str) -> None:
    if client_id != settings.RLMESH_CLI_CLIENT_ID:
        raise OAuthError("invalid_client", f'unknown client_id "{client_id}"', status=401)


def user_subject(user) -> str:
    return f"user_{user.pk}"


# ------------------------------------------------------------- device flow
def start_device_authorization(*, client_id: str, requester_ip: str = "") -> tuple[str, DeviceAuthorization]:
    """Create a pending device authorization; return ``(device_code, record)`` (the code is not stored)."""
    check_client(client_id)
    device_code = "dev_" + secrets.token_urlsafe(32)
    for _ in range(5):  # user codes are short: retry the rare collision
        record = DeviceAuthorization(
            device_code_hash=hash_secret(device_code),
            client_id=client_id,
            interval=settings.DEVICE_CODE_INTERVAL,
            expires_at=timezone.now() + timedelta(seconds=settings.DEVICE_CODE_TTL),
            requester_ip=requester_ip[:64],
        )
        if not DeviceAuthorization.objects.filter(user_code=record.user_code).exists():
            record.save()
            return device_code, record
    raise OAuthError("temporarily_unavailable", "could not allocate a user code", status=503)


def pending_device(user_code: str) -> DeviceAuthorization | None:
    """The pending, unexpired authorization with this user code (case and dash insensitive), or None."""
    code = user_code.strip().upper().replace(" ", "")
    if len(code) == 8 and "-" not in code:
        code = f"{code[:4]}-{code[4:]}"
    record = DeviceAuthorization.objects.filter(user_code=code, status=DeviceAuthorization.Status.PENDING).first()
    if record is None or record.expired:
        return None
    return record


def approve_device(record: DeviceAuthorization, *, user, organization: Organization) -> None:
    """Approve for ``user`` in ``organization`` (which must be one of theirs); only a pending one changes."""
    if not Membership.objects.filter(user=user, organization=organization).exists():
        raise PermissionError("not a member of that organization")
    DeviceAuthorization.objects.filter(pk=record.pk, status=DeviceAuthorization.Status.PENDING).update(
        status=DeviceAuthorization.Status.APPROVED, user=user, organization=organization
    )


def deny_device(record: DeviceAuthorization, *, user) -> None:
    DeviceAuthorization.objects.filter(pk=record.pk, status=DeviceAuthorization.Status.PENDING).update(
        status=DeviceAuthorization.Status.DENIED, user=user
    )


def redeem_device_code(*, device_code: str, client_id: str) -> dict:
    """The device-code grant (RFC 8628 §3.4–3.5): tokens once approved, else the RFC's error codes.

    ``slow_down`` when polled faster than the interval (which then grows by 5 s); an approved code is
    redeemable exactly once (a second redemption is ``invalid_grant``).
    """
    check_client(client_id)
    now = timezone.now()
    # Errors are raised after the transaction commits: a poll's timestamp must be kept even when the
    # answer is "pending" or "slow_down".
    error: OAuthError | None = None
    with transaction.atomic():
        record = DeviceAuthorization.objects.select_for_update().filter(device_code_hash=hash_secret(device_code)).first()
        if record is None or record.client_id != client_id:
            error = OAuthError("invalid_grant", "unknown device_code", unknown_credential=True)
        elif record.status == DeviceAuthorization.Status.REDEEMED:
            error = OAuthError("invalid_grant", "this device code was already used")
        elif record.status == DeviceAuthorization.Status.DENIED:
            error = OAuthError("access_denied", "the sign-in was declined")
        elif record.expired:
            error = OAuthError("expired_token", "the device code expired")
        elif record.status == DeviceAuthorization.Status.PENDING:
            too_fast = record.last_polled_at and (now - record.last_polled_at).total_seconds() < record.interval - 0.5
            record.last_polled_at = now
            if too_fast:
                record.interval += 5
                error = OAuthError("slow_down", f"poll at most every {record.interval} s")
            else:
                error = OAuthError("authorization_pending", "waiting for the user to approve the code")
            record.save(update_fields=["last_polled_at", "interval"])
        else:  # approved: redeem once
            record.status = DeviceAuthorization.Status.REDEEMED
            record.save(update_fields=["status"])
            session = AuthSession.objects.create(user=record.user, organization=record.organization, client_id=client_id)
            tokens = _issue_tokens(session)
    if error is not None:
        raise error
    return tokens


# ------------------------------------------------------------------ tokens
def _issue_tokens(session: AuthSession) -> dict:
    now = int(timezone.now().timestamp())
    claims = {
        "iss": settings.PUBLIC_URL,
        "aud": "rlmesh",
        "sub": user_subject(session.user),
        "org_id": session.organization.provider_id,
        "sid": session.public_id,
        "iat": now,
        "exp": now + settings.ACCESS_TOKEN_TTL,
        "jti": secrets.token_hex(8),
    }
    access = jwt.encode(claims, settings.JWT_SIGNING_KEY, algorithm="HS256")
    refresh = "rt_" + secrets.token_urlsafe(32)
    RefreshToken.objects.create(session=session, token_hash=hash_secret(refresh))
    return {"access_token": access, "refresh_token": refresh, "token_type": "Bearer", "expires_in": settings.ACCESS_TOKEN_TTL}


def refresh_session(*, refresh_token: str, client_id: str, organization_id: str | None = None) -> dict:
    """The refresh grant: rotate the single-use refresh token and issue a new access token.

    ``organization_id`` (the CLI's org switch) moves the session to that organization when the user is a
    member (else ``invalid_grant``). Presenting an already-used refresh token revokes the whole session.
    """
    check_client(client_id)
    token = (
        RefreshToken.objects.select_related("session__user", "session__organization")
        .filter(token_hash=hash_secret(refresh_token))
        .first()
    )
    if token is None:
        raise OAuthError("invalid_grant", "unknown refresh token", unknown_credential=True)
    session = token.session
    if session.revoked_at is not None:
        raise OAuthError("invalid_grant", "this session was signed out")
    if token.used_at is not None:
        if (timezone.now() - token.used_at).total_seconds() <= REFRESH_REUSE_GRACE_SECONDS:
            # Two clients of one session refreshing at once (the official CLI serializes with a lock file,
            # other clients may not): refuse the loser without ending the session.
            raise OAuthError("invalid_grant", "refresh token already used by a concurrent refresh")
        revoke_session(session, reason="refresh token reused")
        raise OAuthError("invalid_grant", "refresh token already used; the session was revoked")
    if session.client_id != client_id:
        raise OAuthError("invalid_grant", "refresh token was issued to another client")
    if not session.user.is_active:
        raise OAuthError("invalid_grant", "the account is disabled")
    with transaction.atomic():
        # Claim the token with a conditional UPDATE: of two concurrent refreshes exactly one wins. A grant
        # refused below (e.g. an org switch to a foreign org) rolls the claim back and the token stays usable.
        if not RefreshToken.objects.filter(pk=token.pk, used_at__isnull=True).update(used_at=timezone.now()):
            raise OAuthError("invalid_grant", "refresh token already used")
        if organization_id:
            membership = (
                Membership.objects.select_related("organization")
                .filter(user=session.user, organization__provider_id=organization_id)
                .first()
            )
            if membership is None:
                raise OAuthError("invalid_grant", f"user is not a member of {organization_id}")
            session.organization = membership.organization
        elif not Membership.objects.filter(user=session.user, organization=session.organization).exists():
            raise OAuthError("invalid_grant", "no longer a member of the session's organization")
        session.last_refreshed_at = timezone.now()
        session.save(update_fields=["organization", "last_refreshed_at"])
        return _issue_tokens(session)


def revoke_session(session: AuthSession, *, reason: str) -> None:
    """Revoke a session (idempotent): its refresh tokens and access tokens stop working at once."""
    AuthSession.objects.filter(pk=session.pk, revoked_at__isnull=True).update(revoked_at=timezone.now(), revoked_reason=reason)


@dataclass(frozen=True)
class SessionAuth:
    session: AuthSession
    membership: Membership


class InvalidToken(Exception):
    pass


def decode_access_token(token: str) -> SessionAuth:
    """Verify an access token (signature, ``exp``, audience) and its session (not revoked, user still a member).

    Raises InvalidToken with a reason. A token stays valid until its ``exp`` unless its session was revoked.
    """
    try:
        claims = jwt.decode(
            token, settings.JWT_SIGNING_KEY, algorithms=["HS256"], audience="rlmesh",
            options={"require": ["exp", "sid", "sub", "org_id"]},
        )
    except jwt.ExpiredSignatureError:
        raise InvalidToken("access token expired") from None
    except jwt.PyJWTError:
        raise InvalidToken("invalid access token") from None
    session = AuthSession.objects.select_related("user").filter(public_id=claims["sid"]).first()
    if session is None or session.revoked_at is not None:
        raise InvalidToken("session signed out")
    membership = (
        Membership.objects.select_related("organization")
        .filter(user=session.user, organization__provider_id=claims["org_id"])
        .first()
    )
    if membership is None or not session.user.is_active:
        raise InvalidToken("no longer a member of this organization")
    return SessionAuth(session=session, membership=membership)
