"""Behind one trusted TLS proxy (``RLMESH_BEHIND_PROXY=true``): the client's address is the one the proxy saw.

Gunicorn only sees the proxy's address. The proxy appends the address of whoever connected to it to
``X-Forwarded-For`` (Caddy's ``reverse_proxy`` and nginx's ``$proxy_add_x_forwarded_for`` both do), so the
right-most entry is the one thing in that header nobody else could forge. Per-address rate limits (sign-in,
OAuth) and anything else reading ``REMOTE_ADDR`` then count clients, not the proxy.
"""

from __future__ import annotations

import ipaddress


class ForwardedForMiddleware:
    """Replace ``REMOTE_ADDR`` with the right-most valid address in ``X-Forwarded-For``; keep it otherwise."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded:
            candidate = forwarded.split(",")[-1].strip()
            try:
                request.META["REMOTE_ADDR"] = str(ipaddress.ip_address(candidate))
            except ValueError:
                pass  # not an address (e.g. "unknown"): keep the proxy's
        return self.get_response(request)
