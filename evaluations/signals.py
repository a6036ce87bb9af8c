"""Signal receivers."""

from __future__ import annotations


def sync_prebuilt_catalog(sender=None, **kwargs) -> None:
    """After ``migrate``, make the ``prebuilt`` repositories match the code's catalog (idempotent)."""
    from .services.image_versions import sync_prebuilt

    sync_prebuilt()
