"""The reference agent's rules for the offline shop (``prebuilt/shop``): like the MiniWoB rules, each turn decides
from the goal and the page as it is now (the ``main id=page-<kind>`` element says which page; titles, flash
messages, checked radios and quantities say what is done), so it needs no memory.

It knows every template of the shop's five task families (search, cart, checkout, account, wishlist; see
:mod:`evaluations.prebuilt.shop.tasks`); on another goal :func:`decide_shop` returns None and the MiniWoB rules
(then ``finish``) apply. Elements are :class:`evaluations.agents.reference_agent.Element`-like objects (``ref``,
``parent``, ``tag``, ``id``, ``classes``, ``text``, ``value``, ``checked``, ``focused``).
"""

from __future__ import annotations

import re
from typing import Any, Callable

__all__ = ["decide_shop"]

_DELIVERY = {"standard": "standard", "express": "express", "next-day": "next_day"}
Call = dict[str, Any]


def _call(tool: str, **arguments: Any) -> Call:
    return {"tool": tool, "arguments": arguments}


class Page:
    """The parsed page with the lookups the rules need."""

    def __init__(self, elements: list):
        self.els = elements
        self.by_ref = {e.ref: e for e in elements}
        main = next((e for e in elements if e.tag == "main" and e.id.startswith("page-")), None)
        self.kind = main.id[5:] if main else ""
        title = self.id("page-title")
        self.title = title.text if title else ""

    def id(self, ident: str):
        return next((e for e in self.els if e.id == ident), None)

    def first(self, pred: Callable) -> Any:
        return next((e for e in self.els if pred(e)), None)

    def within(self, root) -> list:
        """Elements under ``root`` (descendants, in document order)."""
        out, inside = [], {root.ref}
        for e in self.els:
            if e.parent in inside:
                inside.add(e.ref)
                out.append(e)
        return out

    def link(self, cls: str, text: str):
        return self.first(lambda e: e.tag == "a" and cls in e.classes.split() and e.text.lower() == text.lower())

    def row(self, cls: str, name: str):
        """The ``div.<cls>`` holding a product link named ``name`` (cart line, wish-list item)."""
        for e in self.els:
            if e.tag == "div" and cls in e.classes.split():
                link = next((x for x in self.within(e) if "product-link" in x.classes.split()), None)
                if link and link.text == name:
                    return e
        return None

    def click(self, el) -> Call:
        return _call("click", ref=el.ref)

    def click_id(self, ident: str) -> Call | None:
        el = self.id(ident)
        return self.click(el) if el else None

    def text_of(self, ident: str) -> str:
        el = self.id(ident)
        return el.text if el else ""


def _fill(page: Page, el, text: str) -> Call | None:
    """The next call that makes ``el``'s value ``text`` (None when it already is)."""
    if el.value == text:
        return None
    if el.value:  # other text there: select it all, the next type_text replaces it
        return _call("press_key", key="C-a") if el.focused else page.click(el)
    return _call("type_text", ref=el.ref, text=text)


def _search(page: Page, query: str) -> Call:
    box = page.id("search-box")
    if box is None:
        return _call("finish", reason="no search box")
    return _fill(page, box, query) or page.click_id("search-button")


def _open_product(page: Page, name: str) -> Call:
    """Go to the product page of ``name`` by searching its full name."""
    if page.kind == "search" and page.title == f'Results for "{name}"':
        link = page.link("product-link", name)
        return page.click(link) if link else _call("finish", reason=f"{name} not found")
    return _search(page, name)


def _to_category(page: Page, category: str) -> Call:
    link = (page.link("category-link", category) or page.link("filter-category", category)
            or page.first(lambda e: e.id == "product-category" and e.text.lower() == category.lower()))
    return page.click(link) if link else page.click_id("nav-home") or _call("finish", reason="lost")


def _in_category(page: Page, category: str) -> bool:
    return page.kind == "category" and page.title.lower() == category.lower()


def _sorted(page: Page, label: str) -> bool:
    return f"sorted by {label}" in page.text_of("result-count")


def _narrow(page: Page, brand: str | None, sort_id: str, label: str) -> Call | None:
    """On a category page: the brand filter, then the sort order; None when both are set."""
    if brand and page.id("clear-brand") is None:
        link = page.link("filter-brand", brand)
        return page.click(link) if link else _call("finish", reason=f"no brand {brand}")
    if not _sorted(page, label):
        return page.click_id(sort_id)
    return None


def _first_result(page: Page, pred: Callable = lambda card: True) -> Call:
    for card in (e for e in page.els if e.tag == "div" and "product-card" in e.classes.split()):
        inside = page.within(card)
        if pred(inside):
            link = next(x for x in inside if "product-link" in x.classes.split())
            return page.click(link)
    return _call("finish", reason="no matching product")


def _price(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))


def _qty(page: Page, line) -> int:
    text = next((x.text for x in page.within(line) if "qty" in x.classes.split()), "Quantity: 0")
    return int(text.rsplit(" ", 1)[1])


def _line_button(page: Page, line, prefix: str) -> Call:
    button = next(x for x in page.within(line) if x.id.startswith(prefix))
    return page.click(button)


def _radio(page: Page, ident: str) -> Call | None:
    """Click the radio ``ident`` unless it is checked (None when it is)."""
    el = page.id(ident)
    if el is None:
        return _call("finish", reason=f"no option {ident}")
    return None if el.checked else page.click(el)


def _radio_labelled(page: Page, name: str, text: str) -> Call | None:
    for el in page.els:
        if el.tag == "input_radio" and el.id.startswith(f"{name}-"):
            label = page.by_ref.get(el.parent)
            pieces = [x.text for x in page.within(label)] if label else []
            if any(p.strip() == text for p in pieces):
                return None if el.checked else page.click(el)
    return _call("finish", reason=f"no option {text}")


def _checkout(page: Page, choices: list[Callable[[Page], Call | None]]) -> Call:
    for choose in choices:
        step = choose(page)
        if step:
            return step
    return page.click_id("place-order")


# ------------------------------------------------------------------------------------------------ families
def search_open(m, page: Page) -> Call:
    query, name = m[1], m[2]
    if page.kind == "product" and page.title == name:
        return _call("finish", reason="on the product page")
    if page.kind == "search" and page.title == f'Results for "{query}"':
        link = page.link("product-link", name)
        return page.click(link) if link else _call("finish", reason=f"{name} not among the results")
    return _search(page, query)


def cheapest_open(m, page: Page) -> Call:
    brand, category = m[1], m[2]
    if page.kind == "product":
        return _call("finish", reason="opened the cheapest")
    if _in_category(page, category):
        return _narrow(page, brand, "sort-price_asc", "Price: low to high") or _first_result(page)
    return _to_category(page, category)


def category_sorted(m, page: Page) -> Call:
    category, brand = m[1], m[2]
    if _in_category(page, category):
        return _narrow(page, brand, "sort-price_desc", "Price: high to low") or _call("finish", reason="shown")
    return _to_category(page, category)


def add_to_cart(m, page: Page) -> Call:
    return _add_named(m[1], page)


def _add_named(name: str, page: Page) -> Call:
    if page.kind == "cart" and page.row("cart-line", name):
        return _call("finish", reason="in the cart")
    if page.kind == "product" and page.title == name:
        return page.click_id("add-to-cart")
    return _open_product(page, name)


def add_units(m, page: Page) -> Call:
    k, name, variant = int(m[1]), m[2], m[3]
    if page.kind == "cart":
        for line in (e for e in page.els if e.tag == "div" and "cart-line" in e.classes.split()):
            inside = page.within(line)
            if any(x.text == name for x in inside) and any(x.text == variant for x in inside):
                have = _qty(page, line)
                if have == k:
                    return _call("finish", reason="quantity reached")
                return _line_button(page, line, "increase-" if have < k else "decrease-")
    if page.kind == "product" and page.title == name:
        return _radio_labelled(page, "variant", variant) or page.click_id("add-to-cart")
    return _open_product(page, name)


def browse_under(m, page: Page) -> Call:
    category, limit = m[1], float(m[2]) if m[2] else float("inf")
    if page.kind == "cart" and page.first(lambda e: "cart-line" in e.classes.split()):
        return _call("finish", reason="added")
    if page.kind == "product":
        price = _price(page.text_of("product-price"))
        if price < limit and "Out of stock" not in page.text_of("product-stock"):
            return page.click_id("add-to-cart")
        return page.click_id("product-category")
    if _in_category(page, category):
        ok = lambda inside: any("price" in x.classes.split() and _price(x.text) < limit for x in inside) and \
            not any(x.text == "Out of stock" for x in inside)  # noqa: E731
        return _narrow(page, None, "sort-price_asc", "Price: low to high") or _first_result(page, ok)
    return _to_category(page, category)


def remove_line(m, page: Page) -> Call:
    if page.kind != "cart":
        return page.click_id("nav-cart")
    line = page.row("cart-line", m[1])
    return _line_button(page, line, "remove-") if line else _call("finish", reason="removed")


def change_qty(m, page: Page) -> Call:
    name, k = m[1], int(m[2])
    if page.kind != "cart":
        return page.click_id("nav-cart")
    line = page.row("cart-line", name)
    if line is None:
        return _call("finish", reason=f"{name} is not in the cart")
    have = _qty(page, line)
    if have == k:
        return _call("finish", reason="quantity set")
    return _line_button(page, line, "increase-" if have < k else "decrease-")


def buy(m, page: Page) -> Call:
    name, label, delivery = m[1], m[2], _DELIVERY[m[3]]
    if page.kind == "order-confirmation":
        return _call("finish", reason="ordered")
    if page.kind == "checkout":
        return _checkout(page, [lambda p: _radio(p, f"address-{label}"), lambda p: _radio(p, f"delivery-{delivery}")])
    if page.kind == "cart" and page.row("cart-line", name):
        return page.click_id("checkout-link")
    return _add_named(name, page)


def checkout_cart(m, page: Page) -> Call:
    delivery, label, card = _DELIVERY[m[1]], m[2], m[3]
    if page.kind == "order-confirmation":
        return _call("finish", reason="ordered")
    if page.kind == "checkout":
        return _checkout(page, [lambda p: _radio(p, f"address-{label}"), lambda p: _radio(p, f"delivery-{delivery}"),
                                lambda p: _radio_labelled(p, "payment", card)])
    if page.kind == "cart":
        return page.click_id("checkout-link") or _call("finish", reason="the cart is empty")
    return page.click_id("nav-cart")


def buy_cheapest(m, page: Page) -> Call:
    """Order the cheapest product of ``m[1]`` (brand) in ``m[2]`` (category): cheapest_open finds it from the match."""
    if page.kind == "order-confirmation":
        return _call("finish", reason="ordered")
    if page.kind == "checkout":
        return _checkout(page, [lambda p: _radio(p, "delivery-express")])
    if page.kind == "cart" and page.first(lambda e: "cart-line" in e.classes.split()):
        return page.click_id("checkout-link")
    if page.kind == "product":
        return page.click_id("add-to-cart")
    return cheapest_open(m, page)


def _account(page: Page, done: bool, fix: Callable[[Page], Call | None], save: str) -> Call:
    if page.kind != "account":
        return page.click_id("nav-account")
    if done:
        return _call("finish", reason="saved")
    return fix(page) or page.click_id(save)


def newsletter(m, page: Page) -> Call:
    want = m[1] == "Subscribe to"
    summary = page.text_of("account-summary")
    done = ("Newsletter: subscribed" in summary) == want
    box = page.id("newsletter")
    return _account(page, done, lambda p: p.click(box) if box and box.checked != want else None, "save-preferences")


def preferred_delivery(m, page: Page) -> Call:
    key = _DELIVERY[m[1]]
    label = {"standard": "Standard", "express": "Express", "next_day": "Next day"}[key]
    done = f"Preferred delivery: {label}" in page.text_of("account-summary")
    return _account(page, done, lambda p: _radio(p, f"preferred_delivery-{key}"), "save-preferences")


def default_address(m, page: Page) -> Call:
    label = m[1]
    box = page.id(f"address-{label}")
    done = bool(box and any("default-address" in x.classes.split() for x in page.within(box)))
    return _account(page, done, lambda p: p.click_id(f"make-default-{label}"), "save-preferences")


def add_address(m, page: Page) -> Call:
    label, street, city, zip_code = m[1], m[2], m[3], m[4]
    done = page.first(lambda e: "address-label" in e.classes.split() and e.text.lower() == label) is not None

    def fill(p: Page) -> Call | None:
        for ident, text in (("new-label", label), ("new-street", street), ("new-city", city), ("new-zip", zip_code)):
            el = p.id(ident)
            step = _fill(p, el, text) if el else None
            if step:
                return step
        return None

    return _account(page, done, fill, "save-address")


def cancel_order(m, page: Page) -> Call:
    order = m[1]
    if page.kind == "order" and page.title == f"Order {order}":
        if "cancelled" in page.text_of("order-status"):
            return _call("finish", reason="cancelled")
        return page.click_id("cancel-order") or _call("finish", reason="cannot be cancelled")
    if page.kind == "orders":
        link = page.link("order-link", f"Order {order}")
        return page.click(link) if link else _call("finish", reason=f"no order {order}")
    return page.click_id("nav-orders")


def wish_add(m, page: Page) -> Call:
    name = m[1]
    if page.kind == "wishlist" and page.row("wish-item", name):
        return _call("finish", reason="saved")
    if page.kind == "product" and page.title == name:
        return page.click_id("add-to-wishlist")
    return _open_product(page, name)


def wish_remove(m, page: Page) -> Call:
    if page.kind != "wishlist":
        return page.click_id("nav-wishlist")
    item = page.row("wish-item", m[1])
    return _line_button(page, item, "unwish-") if item else _call("finish", reason="removed")


def wish_move(m, page: Page) -> Call:
    name = m[1]
    if page.kind == "cart" and page.row("cart-line", name):
        return _call("finish", reason="moved")
    if page.kind != "wishlist":
        return page.click_id("nav-wishlist")
    item = page.row("wish-item", name)
    return _line_button(page, item, "move-") if item else _call("finish", reason=f"{name} is not on the wish list")


def best_rated(m, page: Page) -> Call:
    category = m[1]
    if page.kind == "wishlist" and page.first(lambda e: "wish-item" in e.classes.split()):
        return _call("finish", reason="saved")
    if page.kind == "product":
        return page.click_id("add-to-wishlist")
    if _in_category(page, category):
        return _narrow(page, None, "sort-rating", "Customer rating") or _first_result(page)
    return _to_category(page, category)


#: (goal pattern, rule) in order; the first matching pattern decides.
RULES: list[tuple[re.Pattern, Callable[[re.Match, Page], Call]]] = [
    (re.compile(r'^Search for "(.+)" and open the product page of the (.+)\.$'), search_open),
    (re.compile(r"^Open the cheapest product by (.+) in the (.+) category\.$"), cheapest_open),
    (re.compile(r"^On the (.+) category page, show only (.+) products sorted by price, highest first\.$"),
     category_sorted),
    (re.compile(r"^Add (\d+) units of the (.+) in (.+) to your cart\.$"), add_units),
    (re.compile(r"^Add the (.+) to your cart\.$"), add_to_cart),
    # The catalog's "Browse <category> and add any item under $N to your cart." and the seed's open-run example
    # "Browse headphones and add any pair to cart."
    (re.compile(r"^Browse (.+?) and add any (?:item|pair|one)(?: under \$(\d+))? to (?:your |the )?cart\.?$"),
     browse_under),
    (re.compile(r"^Remove the (.+) from your cart\.$"), remove_line),
    (re.compile(r"^Change the quantity of the (.+) in your cart to (\d+)\.$"), change_qty),
    (re.compile(r"^Buy the (.+) and have it shipped to your (\w+) address with ([\w-]+) delivery\.$"), buy),
    (re.compile(r"^Check out your cart with ([\w-]+) delivery to your (\w+) address, paying with your (.+)\.$"),
     checkout_cart),
    (re.compile(r"^Buy the cheapest product by (.+) in the (.+) category with express delivery to your default "
                r"address\.$"), buy_cheapest),
    (re.compile(r"^(Subscribe to|Unsubscribe from) the newsletter\.$"), newsletter),
    (re.compile(r"^Set your preferred delivery option to ([\w-]+)\.$"), preferred_delivery),
    (re.compile(r"^Make your (\w+) address your default shipping address\.$"), default_address),
    (re.compile(r'^Add a new address named "(.+)": (.+), (.+) (\d+)\.$'), add_address),
    (re.compile(r"^Cancel your order (O-[\w-]+)\.$"), cancel_order),
    (re.compile(r"^Add the (.+) to your wish list\.$"), wish_add),
    (re.compile(r"^Remove the (.+) from your wish list\.$"), wish_remove),
    (re.compile(r"^Move the (.+) from your wish list to your cart\.$"), wish_move),
    (re.compile(r"^Save the best-rated product in the (.+) category to your wish list\.$"), best_rated),
]


def decide_shop(goal: str, elements: list) -> Call | None:
    """The next call for a shop goal on this page; None when the goal is not a shop template (or the page is not
    a shop page)."""
    page = Page(elements)
    if not page.kind:
        return None
    for pattern, rule in RULES:
        match = pattern.match(goal.strip())
        if match:
            return rule(match, page)
    return None
