"""Template context of every page: the canonical site URL and the request's CSP nonce."""

from __future__ import annotations

from django.conf import settings


def site(request) -> dict:
    """``public_url``: PUBLIC_URL (never the request's Host header); ``csp_nonce``: the nonce django-csp puts in
    this response's Content-Security-Policy (django-htmx's ``{% htmx_script %}`` reads the same name)."""
    return {"public_url": settings.PUBLIC_URL, "csp_nonce": getattr(request, "csp_nonce", None)}
