"""htmx helpers for the dashboard (after NetBox's utilities/htmx.py)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

#: Every page that may answer with a fragment varies on these request headers (caches must not mix them up).
VARY = "HX-Request, HX-History-Restore-Request"


def is_partial(request: HttpRequest) -> bool:
    """True for a real htmx swap: not a boosted navigation, and not a history restore — when htmx's history cache
    misses on Back it requests the URL with ``HX-History-Restore-Request: true`` and puts the answer in place of the
    whole page, so that answer must be the full page (a fragment would leave the page without header or tabs)."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def render_page_or_partial(request: HttpRequest, template: str, partial: str, context: dict, **kwargs) -> HttpResponse:
    """Render ``template#partial`` for an htmx swap, else the full page; always ``Vary`` on the htmx headers."""
    name = f"{template}#{partial}" if is_partial(request) else template
    response = render(request, name, context, **kwargs)
    response["Vary"] = VARY
    return response
