"""Secrets the platform must read back later (an agent endpoint's key), encrypted at rest with Fernet
(``cryptography``) under ``settings.RLMESH_SECRETS_KEY``. Nothing here logs or echoes a plaintext."""

from __future__ import annotations

from django.conf import settings

__all__ = ["SecretUnreadable", "decrypt", "encrypt"]


class SecretUnreadable(Exception):
    """A stored secret that this key cannot decrypt (``RLMESH_SECRETS_KEY`` or ``SECRET_KEY`` changed)."""


def _fernet():
    from cryptography.fernet import Fernet

    return Fernet(settings.RLMESH_SECRETS_KEY.encode())


def encrypt(plaintext: str) -> str:
    """The Fernet token of ``plaintext`` (``""`` for an empty secret: nothing to store)."""
    return _fernet().encrypt(plaintext.encode()).decode() if plaintext else ""


def decrypt(token: str) -> str:
    """The plaintext of a token made by :func:`encrypt` (``""`` for ``""``); SecretUnreadable otherwise."""
    if not token:
        return ""
    from cryptography.fernet import InvalidToken

    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable("the stored secret cannot be decrypted with RLMESH_SECRETS_KEY") from None
