"""The shop's pages about the signed-in user: cart, checkout, order confirmation, orders, one order, wish list and
account. Each returns ``(title, body, page params)`` for :func:`.pages.render`."""

from __future__ import annotations

from .data import DELIVERY, money
from .pages import CATEGORY_NAMES, esc
from .state import ShopState

__all__ = ["account", "cart", "checkout", "confirmation", "order_detail", "orders", "wishlist"]


def _post(action: str, button_id: str, text: str, **fields) -> str:
    hidden = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}">' for k, v in fields.items())
    return (f'<form class="inline" method="post" action="{action}">{hidden}'
            f'<button id="{button_id}" type="submit">{esc(text)}</button></form>')


def cart(state: ShopState) -> tuple[str, str, dict]:
    lines = []
    for i, line in enumerate(state.cart):
        p = state.product(line["id"])
        lines.append(
            f'<div class="cart-line" id="line-{i}"><a class="product-link" href="/product/{p.id}">{esc(p.name)}</a>'
            f'<span class="variant">{esc(line["variant"])}</span><span class="price">{money(p.price)}</span>'
            f'<span class="qty" id="qty-{i}">Quantity: {line["qty"]}</span>'
            + _post("/cart/update", f"decrease-{i}", "-", line=i, qty=line["qty"] - 1)
            + _post("/cart/update", f"increase-{i}", "+", line=i, qty=line["qty"] + 1)
            + _post("/cart/remove", f"remove-{i}", "Remove", line=i) + "</div>")
    if not lines:
        return "Your cart", '<p id="cart-empty">Your cart is empty.</p>', {}
    body = (f'<div id="cart-lines">{"".join(lines)}</div><p id="cart-subtotal">Subtotal: {money(state.subtotal())}'
            '</p><a id="checkout-link" href="/checkout">Proceed to checkout</a>')
    return "Your cart", body, {}


def _radios(name: str, options: list[tuple[str, str]], checked: str) -> str:
    return "".join(
        f'<label><input type="radio" name="{name}" id="{name}-{esc(value)}" value="{esc(value)}"'
        f'{" checked" if value == checked else ""}> {esc(text)}</label>' for value, text in options)


def checkout(state: ShopState, chosen: dict | None = None) -> tuple[str, str, dict]:
    """The checkout form; ``chosen`` keeps the user's choices when a submission was refused."""
    if not state.cart:
        return "Checkout", '<p id="cart-empty">Your cart is empty.</p>', {}
    chosen = chosen or {"address": state.account["default_address"], "delivery": "standard",
                        "payment": state.account["default_payment"]}
    subtotal = state.subtotal()
    addresses = [(a["label"], f'{a["label"].title()}: {a["name"]}, {a["street"]}, {a["city"]} {a["zip"]}')
                 for a in state.addresses]
    deliveries = [(key, f"{label} ({days}) {money(state.shipping(key, subtotal)) if state.shipping(key, subtotal) else 'free'}")
                  for key, (label, _, days) in DELIVERY.items()]
    payments = [(p["id"], p["label"]) for p in state.profile.payments]
    items = "".join(f'<li class="checkout-item">{esc(state.product(x["id"]).name)} ({esc(x["variant"])}) ×{x["qty"]}'
                    f' {money(state.product(x["id"]).price * x["qty"])}</li>' for x in state.cart)
    body = (
        f'<ul id="checkout-items">{items}</ul><p id="checkout-subtotal">Subtotal: {money(subtotal)}</p>'
        '<form id="checkout-form" method="post" action="/checkout">'
        f'<fieldset id="shipping-address"><legend>Shipping address</legend>'
        f'{_radios("address", addresses, chosen.get("address", ""))}</fieldset>'
        f'<fieldset id="delivery-options"><legend>Delivery</legend>'
        f'{_radios("delivery", deliveries, chosen.get("delivery", ""))}</fieldset>'
        f'<fieldset id="payment-methods"><legend>Payment</legend>'
        f'{_radios("payment", payments, chosen.get("payment", ""))}</fieldset>'
        '<button id="place-order" type="submit">Place order</button></form>'
    )
    return "Checkout", body, {}


def _order_lines(state: ShopState, order: dict) -> str:
    return "".join(f'<li class="order-item">{esc(state.product(i["id"]).name)} ({esc(i["variant"])}) ×{i["qty"]} '
                   f'{money(i["price"] * i["qty"])}</li>' for i in order["items"])


def _order_facts(state: ShopState, order: dict) -> str:
    address = next((a for a in state.addresses if a["label"] == order["address"]), None)
    where = f'{order["address"].title()}: {address["street"]}, {address["city"]}' if address else order["address"]
    payment = next((p["label"] for p in state.profile.payments if p["id"] == order["payment"]), order["payment"])
    return (f'<p id="order-status">Status: {esc(order["status"])}</p><p id="order-address">Ship to {esc(where)}</p>'
            f'<p id="order-delivery">Delivery: {esc(DELIVERY[order["delivery"]][0])}</p>'
            f'<p id="order-payment">Paid with {esc(payment)}</p><ul id="order-items">{_order_lines(state, order)}</ul>'
            f'<p id="order-total">Total: {money(order["total"])} (shipping {money(order["shipping"])})</p>')


def confirmation(state: ShopState, order: dict) -> tuple[str, str, dict]:
    body = (f'<p id="confirmation">Thank you! Your order {esc(order["id"])} has been placed.</p>'
            f'{_order_facts(state, order)}<a id="continue-shopping" href="/">Continue shopping</a>')
    return "Order confirmed", body, {"order": order["id"]}


def orders(state: ShopState) -> tuple[str, str, dict]:
    rows = "".join(
        f'<div class="order-row" id="order-{esc(o["id"])}"><a class="order-link" href="/order/{esc(o["id"])}">'
        f'Order {esc(o["id"])}</a><span class="order-date">{esc(o["date"])}</span>'
        f'<span class="order-status">{esc(o["status"])}</span><span class="price">{money(o["total"])}</span></div>'
        for o in reversed(state.orders))
    return "Your orders", rows or '<p id="no-orders">You have no orders yet.</p>', {}


def order_detail(state: ShopState, order: dict) -> tuple[str, str, dict]:
    actions = _post(f'/order/{order["id"]}/reorder', "buy-again", "Buy again")
    if order["status"] == "processing":
        actions += _post(f'/order/{order["id"]}/cancel', "cancel-order", "Cancel order")
    body = f'<p id="order-date">Placed on {esc(order["date"])}</p>{_order_facts(state, order)}{actions}'
    return f'Order {order["id"]}', body, {"order": order["id"]}


def wishlist(state: ShopState) -> tuple[str, str, dict]:
    items = []
    for i, item in enumerate(state.wishlist):
        p = state.product(item["id"])
        items.append(
            f'<div class="wish-item" id="wish-{i}"><a class="product-link" href="/product/{p.id}">{esc(p.name)}</a>'
            f'<span class="variant">{esc(item["variant"])}</span><span class="price">{money(p.price)}</span>'
            f'<span class="category">{esc(CATEGORY_NAMES[p.category])}</span>'
            + _post("/wishlist/move", f"move-{i}", "Move to cart", item=i)
            + _post("/wishlist/remove", f"unwish-{i}", "Remove", item=i) + "</div>")
    return "Your wish list", "".join(items) or '<p id="wishlist-empty">Your wish list is empty.</p>', {}


def account(state: ShopState) -> tuple[str, str, dict]:
    acc = state.account
    addresses = "".join(
        f'<div class="address" id="address-{esc(a["label"])}"><span class="address-label">{esc(a["label"].title())}'
        f'</span>: {esc(a["name"])}, {esc(a["street"])}, {esc(a["city"])} {esc(a["zip"])}'
        + (' <strong class="default-address">(default)</strong>' if a["label"] == acc["default_address"] else
           _post("/account/default-address", f'make-default-{esc(a["label"])}', "Make default", label=a["label"]))
        + "</div>" for a in state.addresses)
    cards = "".join(f'<li class="payment-method">{esc(p["label"])}'
                    + (" (default)" if p["id"] == acc["default_payment"] else "") + "</li>"
                    for p in state.profile.payments)
    deliveries = [(k, v[0]) for k, v in DELIVERY.items()]
    body = (
        f'<p id="account-name">{esc(acc["name"])} · {esc(acc["email"])}</p>'
        f'<p id="account-summary">Newsletter: {"subscribed" if acc["newsletter"] else "not subscribed"} · '
        f'Preferred delivery: {esc(DELIVERY[acc["preferred_delivery"]][0])}</p>'
        f'<h2>Addresses</h2><div id="addresses">{addresses}</div>'
        '<form id="address-form" method="post" action="/account/address"><fieldset><legend>Add an address</legend>'
        '<label>Name <input type="text" id="new-label" name="label"></label>'
        '<label>Street <input type="text" id="new-street" name="street"></label>'
        '<label>City <input type="text" id="new-city" name="city"></label>'
        '<label>ZIP <input type="text" id="new-zip" name="zip"></label>'
        '<button id="save-address" type="submit">Save address</button></fieldset></form>'
        f'<h2>Payment methods</h2><ul id="payment-methods">{cards}</ul>'
        '<form id="preferences-form" method="post" action="/account/preferences"><fieldset><legend>Preferences</legend>'
        f'<label><input type="checkbox" id="newsletter" name="newsletter" value="1"'
        f'{" checked" if acc["newsletter"] else ""}> Send me the newsletter</label>'
        f'{_radios("preferred_delivery", deliveries, acc["preferred_delivery"])}'
        '<button id="save-preferences" type="submit">Save preferences</button></fieldset></form>'
    )
    return "Your account", body, {}
