"""The manual (``docs/``, built by MkDocs into ``site/`` by ``make docs``), served by the platform under ``/docs``.

The built site is static files; this view maps ``/docs/<path>`` to them (``<dir>/`` → ``<dir>/index.html``),
refuses anything outside the built folder, and sends the page's inline scripts' SHA-256 hashes in its
Content-Security-Policy (MkDocs Material writes three small inline scripts per page; the rest of the site allows
only scripts with the response's nonce). Public, like ``/v1/docs``: the manual holds nothing an organization owns.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import re
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.http import FileResponse, Http404, HttpResponse, HttpResponseRedirect
from django.utils._os import safe_join
from django.views.decorators.http import require_safe

#: Where ``make docs`` puts the built manual (mkdocs.yml's ``site_dir``).
SITE_DIR = Path(settings.BASE_DIR) / "site"
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.S)


@lru_cache(maxsize=256)
def _script_hashes(path: str, mtime_ns: int) -> tuple[str, ...]:
    """CSP source expressions (``'sha256-…'``) of every inline ``<script>`` in one HTML file, cached per mtime."""
    data = Path(path).read_bytes()
    return tuple(
        "'sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode() + "'"
        for body in dict.fromkeys(_INLINE_SCRIPT.findall(data))
    )


def _not_built() -> HttpResponse:
    return HttpResponse(
        "The manual is not built on this host: run `make docs` (make demo and make install do).\n",
        status=404, content_type="text/plain; charset=utf-8",
    )


def _with_script_hashes(response: HttpResponse, page: Path) -> HttpResponse:
    hashes = _script_hashes(str(page), page.stat().st_mtime_ns)
    if hashes:
        response._csp_update = {"script-src": list(hashes)}
    return response


def _page_not_found() -> HttpResponse:
    """The manual's own 404 page (its navigation and search still work), with status 404."""
    page = SITE_DIR / "404.html"
    if not page.is_file():
        raise Http404("no such page in the manual")
    return _with_script_hashes(HttpResponse(page.read_bytes(), status=404, content_type="text/html; charset=utf-8"), page)


@require_safe
def manual(request, path: str = ""):
    """``GET /docs/<path>``: a file of the built manual; 404 when absent (or not built), never outside it."""
    if not SITE_DIR.is_dir():
        return _not_built()
    try:
        target = Path(safe_join(SITE_DIR, path))
    except SuspiciousFileOperation:  # a path that leaves the built folder
        return _page_not_found()
    if target.is_dir():
        if path and not path.endswith("/"):
            return HttpResponseRedirect(request.path + "/")
        target = target / "index.html"
    if not target.is_file():
        return _page_not_found()
    content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    response = FileResponse(target.open("rb"), content_type=content_type)
    response["Cache-Control"] = "public, max-age=300"
    return _with_script_hashes(response, target) if target.suffix == ".html" else response
