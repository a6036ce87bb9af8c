"""The shop's pages, rendered server-side as plain HTML (links and forms, no framework): the layout and the
browsing pages (home, search, category, product). Cart, checkout, orders, wish list and account are in
:mod:`.pages_account`.

Every page is ``render(state, kind, title, body, params)``: ``<body data-page='{json}' data-seq=n>`` carries the page
kind and parameters (read by the env into the state's ``page``), ``<main id="page-<kind>">`` tells an agent where
it is, and miniwob's ``core.js`` plus ``shop.js`` let the env read the DOM exactly as on a MiniWoB page.
"""

from __future__ import annotations

import html
import json
import random
from urllib.parse import urlencode

from .data import CATEGORIES, Product, money
from .state import ShopState

__all__ = ["PAGE_SIZE", "SORT_LABELS", "esc", "home", "product_page", "render", "search"]

PAGE_SIZE = 10
SORT_LABELS = {"relevance": "Relevance", "price_asc": "Price: low to high", "price_desc": "Price: high to low",
               "rating": "Customer rating", "name": "Name"}
CATEGORY_NAMES = {c.slug: c.name for c in CATEGORIES}


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def _nav(state: ShopState, query: str = "") -> str:
    count = sum(x["qty"] for x in state.cart)
    return (
        '<header><a id="nav-home" href="/">RLMesh Shop</a>'
        '<form id="search-form" method="get" action="/search">'
        f'<input type="text" id="search-box" name="q" value="{esc(query)}" placeholder="Search products">'
        '<button id="search-button" type="submit">Search</button></form>'
        f'<a id="nav-cart" href="/cart">Cart ({count})</a>'
        f'<a id="nav-wishlist" href="/wishlist">Wish list ({len(state.wishlist)})</a>'
        '<a id="nav-orders" href="/orders">Orders</a><a id="nav-account" href="/account">Account</a>'
        f'<span id="signed-in">Signed in as {esc(state.account["name"])} ({esc(state.profile_id)})</span></header>'
    )


def render(state: ShopState, kind: str, title: str, body: str, params: dict | None = None, *, seq: int = 0,
           error: str = "", query: str = "") -> str:
    """A whole page; consumes the state's flash message."""
    page = {"kind": kind, **(params or {})}
    flash, state.flash = state.flash, ""
    notes = (f'<p class="flash" id="flash">{esc(flash)}</p>' if flash else "") + (
        f'<p class="error" id="error">{esc(error)}</p>' if error else "")
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
        f'<title>{esc(title)} · RLMesh Shop</title><link rel="stylesheet" href="/_shop/shop.css">'
        '<script src="/_wob/core.js"></script><script src="/_shop/shop.js"></script></head>'
        f"<body data-page='{esc(json.dumps(page))}' data-seq=\"{seq}\">{_nav(state, query)}"
        f'<main id="page-{kind.replace("_", "-")}"><h1 id="page-title">{esc(title)}</h1>{notes}{body}</main>'
        '</body></html>'
    )


def stock_text(product: Product) -> str:
    if product.stock <= 0:
        return '<span class="stock out-of-stock">Out of stock</span>'
    return f'<span class="stock">In stock ({product.stock})</span>'


def card(product: Product) -> str:
    """One product in a list: name (link), price, rating, brand, stock."""
    return (
        f'<div class="product-card" id="card-{product.id}"><a class="product-link" href="/product/{product.id}">'
        f'{esc(product.name)}</a><span class="price">{money(product.price)}</span>'
        f'<span class="rating">{product.rating:.1f} stars ({product.review_count})</span>'
        f'<span class="brand">{esc(product.brand)}</span>{stock_text(product)}</div>'
    )


def home(state: ShopState) -> tuple[str, str, dict]:
    """(title, body, params) of the home page: categories and featured products (the episode seed picks them)."""
    rng = random.Random(f"rlmesh-shop-home-{state.content.seed}-{state.seed}")
    featured = rng.sample(state.content.products, 6)
    cats = "".join(f'<li><a class="category-link" href="/category/{c.slug}">{esc(c.name)}</a></li>'
                   for c in CATEGORIES)
    body = (f'<h2>Categories</h2><ul id="categories">{cats}</ul><h2>Featured</h2>'
            f'<div id="featured">{"".join(card(p) for p in featured)}</div>')
    return "Welcome", body, {}


# ------------------------------------------------------------------------------------------------- search
def _number(value: str) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def search_params(query: dict[str, str]) -> dict:
    """The search parameters a request names (unknown sorts fall back to relevance)."""
    params = {k: (query.get(k) or "").strip() for k in ("q", "category", "brand", "min_price", "max_price",
                                                        "min_rating", "sort", "in_stock")}
    if params["sort"] not in SORT_LABELS:
        params["sort"] = "relevance"
    return params


def matches(p: Product, params: dict) -> bool:
    words = params["q"].lower().split()
    text = f"{p.name} {p.brand} {p.category} {CATEGORY_NAMES[p.category]}".lower()
    checks = [all(w in text for w in words), not params["category"] or p.category == params["category"],
              not params["brand"] or p.brand.lower() == params["brand"].lower(),
              _number(params["min_price"]) is None or p.price >= _number(params["min_price"]),
              _number(params["max_price"]) is None or p.price <= _number(params["max_price"]),
              _number(params["min_rating"]) is None or p.rating >= _number(params["min_rating"]),
              not params["in_stock"] or p.stock > 0]
    return all(checks)


def results(state: ShopState, params: dict) -> list[Product]:
    found = [p for p in state.content.products if matches(p, params)]
    keys = {"price_asc": lambda p: (p.price, p.id), "price_desc": lambda p: (-p.price, p.id),
            "rating": lambda p: (-p.rating, -p.review_count, p.id), "name": lambda p: (p.name, p.id)}
    if params["sort"] in keys:
        found.sort(key=keys[params["sort"]])
    return found


def _link(base: str, params: dict, **change) -> str:
    """``base`` with ``params`` changed by ``change`` (empty values, relevance sorting and, unless changed, the
    page number are left out; a category page's own category too)."""
    merged = {**params, **change}
    if "page" not in change:
        merged.pop("page", None)
    if base.startswith("/category/"):
        merged.pop("category", None)
    merged = {k: v for k, v in merged.items() if v not in ("", None) and not (k == "sort" and v == "relevance")}
    return base + ("?" + urlencode(merged) if merged else "")


def _filters(state: ShopState, params: dict, base: str, fixed_category: bool) -> str:
    parts = []
    if not fixed_category:
        cats = " ".join(f'<a class="filter-category" href="{esc(_link(base, params, category=c.slug, brand=""))}">'
                        f'{esc(c.name)}</a>' for c in CATEGORIES)
        parts.append(f'<div id="filter-categories">Category: {cats}'
                     + (f' <a id="clear-category" href="{esc(_link(base, params, category="", brand=""))}">any</a>'
                        if params["category"] else "") + "</div>")
    if params["category"]:
        brands = sorted({p.brand for p in state.content.in_category(params["category"])})
        links = " ".join(f'<a class="filter-brand" href="{esc(_link(base, params, brand=b))}">{esc(b)}</a>'
                         for b in brands)
        parts.append(f'<div id="filter-brands">Brand: {links}'
                     + (f' <a id="clear-brand" href="{esc(_link(base, params, brand=""))}">any</a>'
                        if params["brand"] else "") + "</div>")
    sorts = " ".join(f'<a class="sort-option" id="sort-{k}" href="{esc(_link(base, params, sort=k))}">{v}</a>'
                     for k, v in SORT_LABELS.items())
    parts.append(f'<div id="sort-options">Sort: {sorts}</div>')
    hidden = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}">' for k, v in params.items()
                     if k in ("q", "category", "brand", "sort") and v and not (fixed_category and k == "category"))
    parts.append(
        f'<form id="price-filter" method="get" action="{esc(base)}">{hidden}'
        f'<label>Min price <input type="text" id="min-price" name="min_price" value="{esc(params["min_price"])}">'
        f'</label><label>Max price <input type="text" id="max-price" name="max_price" '
        f'value="{esc(params["max_price"])}"></label><label>Min rating <input type="text" id="min-rating" '
        f'name="min_rating" value="{esc(params["min_rating"])}"></label><label><input type="checkbox" id="in-stock" '
        f'name="in_stock" value="1"{" checked" if params["in_stock"] else ""}> In stock only</label>'
        '<button id="apply-filters" type="submit">Apply filters</button></form>')
    return f'<div class="filters" id="filters">{"".join(parts)}</div>'


def search(state: ShopState, query: dict[str, str], category: str = "") -> tuple[str, str, dict]:
    """(title, body, page params) of a search page, or a category page when ``category`` is given."""
    params = search_params(query)
    base = "/search"
    if category:
        params["category"], base = category, f"/category/{category}"
    found = results(state, params)
    try:
        page = max(1, int(query.get("page") or 1))
    except ValueError:
        page = 1
    pages = max(1, -(-len(found) // PAGE_SIZE))
    page = min(page, pages)
    shown = found[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    nav = []
    if page > 1:
        nav.append(f'<a id="prev-page" href="{esc(_link(base, params, page=page - 1))}">Previous page</a>')
    if page < pages:
        nav.append(f'<a id="next-page" href="{esc(_link(base, params, page=page + 1))}">Next page</a>')
    title = CATEGORY_NAMES.get(category, "") if category else (f'Results for "{params["q"]}"' if params["q"]
                                                              else "All products")
    body = (_filters(state, params, base, bool(category))
            + f'<p id="result-count">{len(found)} product{"" if len(found) == 1 else "s"} · sorted by {SORT_LABELS[params["sort"]]} · page {page} '
              f'of {pages}</p><div id="results">{"".join(card(p) for p in shown) or "<p>No products match.</p>"}'
              f'</div><div id="pager">{" ".join(nav)}</div>')
    record = {"query": params["q"], "category": params["category"], "brand": params["brand"],
              "sort": params["sort"], "min_price": params["min_price"], "max_price": params["max_price"],
              "min_rating": params["min_rating"], "in_stock": bool(params["in_stock"]), "page": page}
    return title, body, record


# ------------------------------------------------------------------------------------------------- product
def product_page(state: ShopState, product: Product) -> tuple[str, str, dict]:
    variants = "".join(
        f'<label><input type="radio" name="variant" id="variant-{i}" value="{esc(v)}"{" checked" if i == 0 else ""}>'
        f' {esc(v)}</label>' for i, v in enumerate(product.variants))
    reviews = "".join(f'<li class="review">{esc(author)}: {stars}/5 · {esc(text)}</li>'
                      for author, stars, text in product.reviews) or "<li>No reviews yet.</li>"
    disabled = " disabled" if product.stock <= 0 else ""
    body = (
        f'<p id="product-brand">Brand: {esc(product.brand)} · Category: <a id="product-category" '
        f'href="/category/{product.category}">{esc(CATEGORY_NAMES[product.category])}</a></p>'
        f'<p id="product-price" class="price">{money(product.price)}</p>'
        f'<p id="product-rating" class="rating">{product.rating:.1f} stars from {product.review_count} reviews</p>'
        f'<p id="product-stock">{stock_text(product)}</p><p id="product-description">{esc(product.description)}</p>'
        f'<form id="add-form" method="post" action="/cart/add"><input type="hidden" name="product" '
        f'value="{product.id}"><fieldset id="variants"><legend>Variant</legend>{variants}</fieldset>'
        f'<label>Quantity <input type="text" id="qty" name="qty" value="1"></label>'
        f'<button id="add-to-cart" type="submit"{disabled}>Add to cart</button>'
        f'<button id="add-to-wishlist" type="submit" formaction="/wishlist/add">Add to wish list</button></form>'
        f'<h2>Reviews</h2><ul id="reviews">{reviews}</ul>'
    )
    return product.name, body, {"product": product.as_item()}
