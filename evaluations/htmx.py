"""htmx helpers for the dashboard (after NetBox's utilities/htmx.py)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def is_partial(request: HttpRequest) -> bool:
    """True for a real htmx swap (not a boosted navigation, which wants the full page)."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted


def render_page_or_partial(request: HttpRequest, template: str, partial: str, context: dict, **kwargs) -> HttpResponse:
    """Render ``template#partial`` for an htmx swap, else the full page; always ``Vary: HX-Request``."""
    name = f"{template}#{partial}" if is_partial(request) else template
    response = render(request, name, context, **kwargs)
    response["Vary"] = "HX-Request"
    return response
