"""The shop web app without a browser: every page renders, every form changes the server-side state, refused
actions say why, and each page served is recorded with its kind and parameters."""

from __future__ import annotations

import io
import json
import re
from urllib.parse import urlencode

import pytest

from evaluations.prebuilt.shop.app import ShopApp, ShopServer
from evaluations.prebuilt.shop.data import content
from evaluations.prebuilt.shop.state import ShopState


class Client:
    def __init__(self, profile: str = "U_001", **initial):
        self.app = ShopApp(ShopState.start(content(0), profile, initial=initial))

    @property
    def state(self) -> ShopState:
        return self.app.state

    def request(self, method: str, path: str, form: dict | None = None) -> tuple[str, str | None, str]:
        body = urlencode(form or {}).encode()
        path, _, query = path.partition("?")
        environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
                   "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}
        out = {}

        def start_response(status, headers):
            out.update(status=status, headers=dict(headers))

        html = b"".join(self.app(environ, start_response)).decode()
        return out["status"], out["headers"].get("Location"), html

    def get(self, path: str) -> str:
        status, _, html = self.request("GET", path)
        assert status == "200 OK", (path, status)
        return html

    def post(self, path: str, **form) -> str | None:
        status, location, html = self.request("POST", path, form)
        assert status == "303 See Other", (status, re.findall(r'id="error">([^<]*)', html))
        return location


def page_of(html: str) -> dict:
    import html as htmllib

    return json.loads(htmllib.unescape(re.search(r"data-page='([^']*)'", html)[1]))


@pytest.fixture
def shop() -> Client:
    return Client()


def in_stock(n: int = 0, **kw):
    return [p for p in content(0).products if p.stock >= 5 and all(getattr(p, k) == v for k, v in kw.items())][n]


def test_every_page_renders_with_its_kind_and_the_dom_helpers(shop):
    p = content(0).products[0]
    for path, kind in [("/", "home"), ("/search?q=sonix&sort=price_asc", "search"), ("/category/headphones", "category"),
                       (f"/product/{p.id}", "product"), ("/cart", "cart"), ("/checkout", "checkout"),
                       ("/orders", "orders"), (f"/order/{shop.state.orders[0]['id']}", "order"),
                       ("/wishlist", "wishlist"), ("/account", "account")]:
        html = shop.get(path)
        assert page_of(html)["kind"] == kind and f'<main id="page-{kind}">' in html
        assert '<script src="/_wob/core.js"></script>' in html and "Signed in as" in html
    assert shop.state.visited[3] == {"kind": "product", "product": p.as_item()}
    assert shop.request("GET", "/product/P999")[0] == "404 Not Found"
    status, _, core = shop.request("GET", "/_wob/core.js")
    assert status == "200 OK" and "core.getDOMInfo = function" in core


def test_search_filters_sort_and_pages(shop):
    html = shop.get("/category/headphones?brand=Sonix&sort=price_desc&max_price=200")
    page = page_of(html)
    assert page | {"category": "headphones", "brand": "Sonix", "sort": "price_desc", "max_price": "200"} == page
    prices = [float(x.replace(",", "")) for x in re.findall(r'class="price">\$([\d,.]+)<', html)]
    expected = sorted((p.price for p in content(0).in_category("headphones") if p.brand == "Sonix" and p.price <= 200),
                      reverse=True)
    assert prices == expected[:10]
    everything = shop.get("/search?page=2")
    assert "300 products · sorted by Relevance · page 2 of 30" in everything and 'id="prev-page"' in everything


def test_cart_quantities_and_removal(shop):
    p = in_stock(0)
    assert shop.post("/cart/add", product=p.id, variant=p.variants[-1], qty=2) == "/cart"
    assert shop.state.cart == [{"id": p.id, "variant": p.variants[-1], "qty": 2}]
    assert f"Added 2 × {p.name}" in shop.get("/cart")
    shop.post("/cart/update", line=0, qty=3)
    assert shop.state.cart[0]["qty"] == 3
    shop.post("/cart/update", line=0, qty=0)
    assert shop.state.cart == []
    status, _, html = shop.request("POST", "/cart/add", {"product": p.id, "variant": "Plaid", "qty": 1})
    assert status == "400 Bad Request" and "choose one of" in html and page_of(html)["kind"] == "product"
    sold_out = next(x for x in content(0).products if x.stock == 0)
    _, _, html = shop.request("POST", "/cart/add", {"product": sold_out.id, "variant": sold_out.variants[0]})
    assert "is out of stock" in html and "disabled" in shop.get(f"/product/{sold_out.id}")


def test_checkout_places_an_order_with_the_chosen_address_delivery_and_card():
    shop = Client("U_001")
    p = in_stock(1)
    shop.post("/cart/add", product=p.id, variant=p.variants[0])
    form = shop.get("/checkout")
    assert 'id="address-home" value="home" checked' in form and 'id="delivery-standard" value="standard" checked' in form
    status, _, html = shop.request("POST", "/checkout", {"address": "home", "delivery": "", "payment": "card-1"})
    assert status == "400 Bad Request" and "choose a delivery option" in html
    location = shop.post("/checkout", address="work", delivery="next_day", payment="card-2")
    order = shop.state.orders[-1]
    assert location == f"/order/{order['id']}/confirmation" and shop.state.cart == []
    assert (order["address"], order["delivery"], order["payment"], order["placed"]) == ("work", "next_day", "card-2",
                                                                                        "episode")
    assert order["total"] == round(p.price + 19.99, 2)
    assert "has been placed" in shop.get(location) and page_of(shop.get(location))["order"] == order["id"]


def test_orders_cancel_and_buy_again():
    profile = next(p for p in content(0).profiles if p.orders[-1]["status"] == "processing")
    shop = Client(profile.id)
    open_order, done = profile.orders[-1]["id"], profile.orders[0]["id"]
    assert shop.post(f"/order/{open_order}/cancel") == f"/order/{open_order}"
    assert shop.state.order(open_order)["status"] == "cancelled"
    status, _, html = shop.request("POST", f"/order/{open_order}/cancel")
    assert status == "400 Bad Request" and "can no longer be cancelled" in html
    if any(content(0).by_id[i["id"]].stock for i in profile.orders[0]["items"]):
        assert shop.post(f"/order/{done}/reorder") == "/cart" and shop.state.cart


def test_wish_list_and_account():
    shop = Client("U_001")
    p, q = in_stock(2), in_stock(3)
    shop.post("/wishlist/add", product=p.id, variant=p.variants[0])
    shop.post("/wishlist/add", product=q.id, variant=q.variants[0])
    assert shop.post("/wishlist/move", item=0) == "/cart"
    assert [x["id"] for x in shop.state.cart] == [p.id] and [x["id"] for x in shop.state.wishlist] == [q.id]
    shop.post("/wishlist/remove", item=0)
    assert shop.state.wishlist == []
    shop.post("/account/address", label="Cabin", street="3 Pine Road", city="Oakridge", zip="90210")
    assert shop.state.addresses[-1] | {"label": "cabin", "street": "3 Pine Road"} == shop.state.addresses[-1]
    shop.post("/account/default-address", label="cabin")
    shop.post("/account/preferences", newsletter="1", preferred_delivery="express")
    account = shop.state.summary()["account"]
    assert (account["default_address"], account["newsletter"], account["preferred_delivery"]) == ("cabin", True, "express")
    assert "Newsletter: subscribed" in shop.get("/account")
    status, _, html = shop.request("POST", "/account/address", {"label": "cabin", "street": "x", "city": "y", "zip": "1"})
    assert status == "400 Bad Request" and "already have an address named cabin" in html


def test_the_server_serves_on_loopback():
    import urllib.request

    server = ShopServer(ShopApp(ShopState.start(content(0), "U_002")))
    try:
        assert server.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.url + "/account") as r:
            assert "U_002" in r.read().decode() and r.headers["Cache-Control"] == "no-store"
    finally:
        server.close()
