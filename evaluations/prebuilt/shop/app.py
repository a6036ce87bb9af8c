"""The shop as a WSGI application over one :class:`~.state.ShopState` (one signed-in user, one browser), served on
a loopback port by :class:`ShopServer` in a thread of the env process.

GET pages render from the state; POST actions change it through the state's methods and answer ``303 See Other``
to the page that shows the result (a refused action re-renders with the reason). Every HTML page served is
numbered (``seq``) and recorded in ``state.visited``; the env compares the number with the page the browser shows
to know when a navigation has finished. Static files: miniwob's ``core.js`` (from the wheel) at
``/_wob/core.js``, ``/_shop/shop.js`` and ``/_shop/shop.css``.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Callable
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from . import pages, pages_account
from .state import ShopError, ShopState

__all__ = ["ShopApp", "ShopServer"]

STATIC = Path(__file__).with_name("static")
_POST_ROUTES: dict[str, str] = {
    "/cart/add": "_add_to_cart", "/cart/update": "_update_line", "/cart/remove": "_remove_line",
    "/wishlist/add": "_add_to_wishlist", "/wishlist/remove": "_unwish", "/wishlist/move": "_move_to_cart",
    "/checkout": "_place_order", "/account/default-address": "_default_address", "/account/address": "_add_address",
    "/account/preferences": "_preferences",
}
_ORDER_ACTION = re.compile(r"^/order/(?P<id>[A-Za-z0-9-]+)/(?P<action>cancel|reorder)$")


def _static(name: str) -> bytes:
    if name == "core.js":
        import miniwob

        return (Path(miniwob.__file__).parent / "html" / "core" / "core.js").read_bytes()
    return (STATIC / name).read_bytes()


class ShopApp:
    """The WSGI callable. ``state`` is replaced by the env at every reset; ``lock`` guards it (the server is
    threaded and the env reads the state between requests)."""

    def __init__(self, state: ShopState):
        self.state = state
        self.lock = threading.RLock()
        self.seq = 0
        self._static = {"/_wob/core.js": ("core.js", "text/javascript"),
                        "/_shop/shop.js": ("shop.js", "text/javascript"), "/_shop/shop.css": ("shop.css", "text/css")}
        self._cache: dict[str, bytes] = {}

    # -- WSGI --------------------------------------------------------------------------------------------
    def __call__(self, environ: dict, start_response: Callable) -> list[bytes]:
        path, method = environ.get("PATH_INFO") or "/", environ.get("REQUEST_METHOD", "GET")
        if path in self._static:
            name, kind = self._static[path]
            body = self._cache.setdefault(name, _static(name))
            start_response("200 OK", [("Content-Type", kind), ("Cache-Control", "max-age=3600"),
                                      ("Content-Length", str(len(body)))])
            return [body]
        query = {k: v[-1] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        with self.lock:
            if method == "POST":
                size = int(environ.get("CONTENT_LENGTH") or 0)
                form = {k: v[-1] for k, v in parse_qs(environ["wsgi.input"].read(size).decode()).items()}
                status, body, location = self.post(path, form)
            else:
                status, body, location = self.get(path, query)
        headers = [("Cache-Control", "no-store")]
        if location:
            headers.append(("Location", location))
        data = body.encode("utf-8")
        headers += [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(data)))]
        start_response(status, headers)
        return [data]

    # -- pages ---------------------------------------------------------------------------------------------
    def _page(self, kind: str, built: tuple[str, str, dict], *, error: str = "", status: str = "200 OK",
              query: str = "") -> tuple[str, str, str]:
        title, body, params = built
        self.seq += 1
        self.state.visited.append({"kind": kind, **params})
        return status, pages.render(self.state, kind, title, body, params, seq=self.seq, error=error,
                                    query=query), ""

    def get(self, path: str, query: dict[str, str]) -> tuple[str, str, str]:
        """``(status, html, location)`` of a GET."""
        s = self.state
        try:
            if path == "/":
                return self._page("home", pages.home(s))
            if path == "/search":
                return self._page("search", pages.search(s, query), query=query.get("q", ""))
            if path.startswith("/category/") and path[10:] in pages.CATEGORY_NAMES:
                return self._page("category", pages.search(s, query, category=path[10:]))
            if path.startswith("/product/"):
                return self._page("product", pages.product_page(s, s.product(path[9:])))
            simple = {"/cart": ("cart", pages_account.cart), "/checkout": ("checkout", pages_account.checkout),
                      "/orders": ("orders", pages_account.orders), "/wishlist": ("wishlist", pages_account.wishlist),
                      "/account": ("account", pages_account.account)}
            if path in simple:
                kind, build = simple[path]
                return self._page(kind, build(s))
            if path.startswith("/order/") and path.endswith("/confirmation"):
                order = s.order(path[7:-13])
                return self._page("order_confirmation", pages_account.confirmation(s, order))
            if path.startswith("/order/"):
                return self._page("order", pages_account.order_detail(s, s.order(path[7:])))
        except ShopError as exc:
            return self._page("not_found", ("Not found", f'<p id="not-found">{pages.esc(exc)}</p>', {}),
                              status="404 Not Found")
        return self._page("not_found", ("Not found", '<p id="not-found">No such page.</p>', {}), status="404 Not Found")

    def post(self, path: str, form: dict[str, str]) -> tuple[str, str, str]:
        """``(status, html, location)`` of a POST: ``303`` to the result page, or the form again with the error."""
        match = _ORDER_ACTION.match(path)
        handler = getattr(self, _POST_ROUTES[path]) if path in _POST_ROUTES else None
        try:
            if match:
                order_id = match["id"]
                if match["action"] == "cancel":
                    self.state.flash = self.state.cancel_order(order_id)
                    return "303 See Other", "", f"/order/{order_id}"
                self.state.flash = self.state.reorder(order_id)
                return "303 See Other", "", "/cart"
            if handler is None:
                return self._page("not_found", ("Not found", '<p id="not-found">No such action.</p>', {}),
                                  status="404 Not Found")
            return "303 See Other", "", handler(form)
        except (ShopError, ValueError) as exc:
            return self._refused(path, form, str(exc))

    def _refused(self, path: str, form: dict[str, str], error: str) -> tuple[str, str, str]:
        s = self.state
        if path == "/checkout":
            return self._page("checkout", pages_account.checkout(s, form), error=error, status="400 Bad Request")
        if path in ("/cart/add", "/wishlist/add") and form.get("product") in s.content.by_id:
            return self._page("product", pages.product_page(s, s.product(form["product"])), error=error,
                              status="400 Bad Request")
        if path.startswith("/account"):
            return self._page("account", pages_account.account(s), error=error, status="400 Bad Request")
        if path.startswith("/wishlist"):
            return self._page("wishlist", pages_account.wishlist(s), error=error, status="400 Bad Request")
        return self._page("cart", pages_account.cart(s), error=error, status="400 Bad Request")

    # -- actions (each returns where to go next) ---------------------------------------------------------
    def _add_to_cart(self, form: dict) -> str:
        self.state.flash = self.state.add_to_cart(form.get("product", ""), form.get("variant", ""),
                                                  int(form.get("qty") or 1))
        return "/cart"

    def _update_line(self, form: dict) -> str:
        self.state.flash = self.state.set_quantity(int(form["line"]), int(form["qty"]))
        return "/cart"

    def _remove_line(self, form: dict) -> str:
        self.state.flash = self.state.remove_line(int(form["line"]))
        return "/cart"

    def _add_to_wishlist(self, form: dict) -> str:
        self.state.flash = self.state.add_to_wishlist(form.get("product", ""), form.get("variant", ""))
        return "/wishlist"

    def _unwish(self, form: dict) -> str:
        self.state.flash = self.state.remove_from_wishlist(int(form["item"]))
        return "/wishlist"

    def _move_to_cart(self, form: dict) -> str:
        self.state.flash = self.state.move_to_cart(int(form["item"]))
        return "/cart"

    def _place_order(self, form: dict) -> str:
        order = self.state.place_order(form.get("address", ""), form.get("delivery", ""), form.get("payment", ""))
        return f"/order/{order['id']}/confirmation"

    def _default_address(self, form: dict) -> str:
        self.state.flash = self.state.set_default_address(form.get("label", ""))
        return "/account"

    def _add_address(self, form: dict) -> str:
        self.state.flash = self.state.add_address(form.get("label", ""), form.get("street", ""),
                                                  form.get("city", ""), form.get("zip", ""))
        return "/account"

    def _preferences(self, form: dict) -> str:
        self.state.flash = self.state.set_preferences(form.get("newsletter") == "1",
                                                      form.get("preferred_delivery", ""))
        return "/account"


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - wsgiref's name
        pass


class ShopServer:
    """``app`` served on ``127.0.0.1`` (a free port) by a daemon thread until :meth:`close`."""

    def __init__(self, app: ShopApp):
        self.app = app
        self.httpd = make_server("127.0.0.1", 0, app, server_class=_ThreadingServer, handler_class=_QuietHandler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="shop-server", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
