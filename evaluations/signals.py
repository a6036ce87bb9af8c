"""Signal receivers."""

from __future__ import annotations


def sync_prebuilt_catalog(sender=None, **kwargs) -> None:
    """After ``migrate``, make the ``prebuilt`` repositories and the catalog's published scores match the code's
    catalog (idempotent)."""
    from .services.image_versions import sync_prebuilt
    from .services.published_scores import sync_published

    sync_prebuilt()
    sync_published()
