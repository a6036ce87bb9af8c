"""The signed-in user's session in the shop: cart, wish list, orders, account settings, the pages seen, and the page
and form values the browser shows (read from the DOM by the env after every step).

Every change the web app makes goes through a method here (each returns a message for the next page, or raises
:class:`ShopError` with what went wrong); :meth:`ShopState.summary` is the whole state as plain JSON, which the
state checks (:mod:`.checks`) and the judge read.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from .data import DELIVERY, FREE_SHIPPING_FROM, Content, Product, money

__all__ = ["MAX_QTY", "ShopError", "ShopState"]

MAX_QTY = 10


class ShopError(ValueError):
    """An action the shop refuses (out of stock, unknown order, missing checkout choice); shown on the page."""


@dataclass
class ShopState:
    """One episode's session for ``profile_id`` on ``content``; ``initial`` pre-fills ``cart`` (``[{"id",
    "variant", "qty"}]``) and ``wishlist`` (``[{"id", "variant"}]``)."""

    content: Content
    profile_id: str
    seed: int = 0
    cart: list[dict] = field(default_factory=list)
    wishlist: list[dict] = field(default_factory=list)
    orders: list[dict] = field(default_factory=list)
    addresses: list[dict] = field(default_factory=list)
    account: dict = field(default_factory=dict)
    visited: list[dict] = field(default_factory=list)
    page: dict = field(default_factory=dict)
    form: dict = field(default_factory=dict)
    flash: str = ""
    orders_placed: int = 0

    @classmethod
    def start(cls, content: Content, profile_id: str, *, seed: int = 0, initial: dict | None = None) -> ShopState:
        """A fresh session: the profile's addresses, settings and past orders, plus ``initial`` cart/wish list."""
        profile = content.profile(profile_id)
        initial = initial or {}
        state = cls(content=content, profile_id=profile_id, seed=seed,
                    orders=[{**copy.deepcopy(o), "placed": "before"} for o in profile.orders],
                    addresses=[dict(a) for a in profile.addresses],
                    account={"name": profile.name, "email": profile.email,
                             "default_address": profile.default_address, "default_payment": profile.default_payment,
                             "newsletter": profile.newsletter, "preferred_delivery": profile.preferred_delivery})
        for line in initial.get("cart", ()):
            state.cart.append({"id": line["id"], "variant": line["variant"], "qty": int(line.get("qty", 1))})
        for item in initial.get("wishlist", ()):
            state.wishlist.append({"id": item["id"], "variant": item["variant"]})
        return state

    # -- lookups -----------------------------------------------------------------------------------------
    @property
    def profile(self):
        return self.content.profile(self.profile_id)

    def product(self, product_id: str) -> Product:
        try:
            return self.content.by_id[product_id]
        except KeyError:
            raise ShopError(f"no product {product_id!r}") from None

    def order(self, order_id: str) -> dict:
        for order in self.orders:
            if order["id"] == order_id:
                return order
        raise ShopError(f"no order {order_id!r}")

    def address(self, label: str) -> dict:
        for a in self.addresses:
            if a["label"] == label:
                return a
        raise ShopError(f"no address named {label!r}")

    def payment(self, payment_id: str) -> dict:
        for p in self.profile.payments:
            if p["id"] == payment_id:
                return p
        raise ShopError(f"no payment method {payment_id!r}")

    def _variant(self, product: Product, variant: str) -> str:
        if not variant and len(product.variants) == 1:
            return product.variants[0]
        if variant not in product.variants:
            raise ShopError(f"choose one of {', '.join(product.variants)} for {product.name}")
        return variant

    def subtotal(self) -> float:
        return round(sum(self.product(line["id"]).price * line["qty"] for line in self.cart), 2)

    def shipping(self, delivery: str, subtotal: float | None = None) -> float:
        subtotal = self.subtotal() if subtotal is None else subtotal
        return 0.0 if delivery == "standard" and subtotal >= FREE_SHIPPING_FROM else DELIVERY[delivery][1]

    # -- cart ----------------------------------------------------------------------------------------------
    def add_to_cart(self, product_id: str, variant: str, qty: int = 1) -> str:
        product = self.product(product_id)
        variant = self._variant(product, variant)
        if product.stock <= 0:
            raise ShopError(f"{product.name} is out of stock")
        line = next((x for x in self.cart if x["id"] == product_id and x["variant"] == variant), None)
        have = line["qty"] if line else 0
        qty = max(1, int(qty))
        if have + qty > min(product.stock, MAX_QTY):
            raise ShopError(f"only {min(product.stock, MAX_QTY)} of {product.name} can be ordered at once")
        if line:
            line["qty"] += qty
        else:
            self.cart.append({"id": product_id, "variant": variant, "qty": qty})
        return f"Added {qty} × {product.name} ({variant}) to your cart."

    def _line(self, index: int) -> dict:
        if not 0 <= index < len(self.cart):
            raise ShopError("that cart line no longer exists")
        return self.cart[index]

    def set_quantity(self, index: int, qty: int) -> str:
        line = self._line(index)
        product = self.product(line["id"])
        if qty <= 0:
            return self.remove_line(index)
        if qty > min(product.stock, MAX_QTY):
            raise ShopError(f"only {min(product.stock, MAX_QTY)} of {product.name} can be ordered at once")
        line["qty"] = qty
        return f"{product.name}: quantity {qty}."

    def remove_line(self, index: int) -> str:
        line = self._line(index)
        self.cart.pop(index)
        return f"Removed {self.product(line['id']).name} from your cart."

    # -- wish list -------------------------------------------------------------------------------------------
    def add_to_wishlist(self, product_id: str, variant: str) -> str:
        product = self.product(product_id)
        variant = self._variant(product, variant) if variant or len(product.variants) == 1 else product.variants[0]
        if any(x["id"] == product_id and x["variant"] == variant for x in self.wishlist):
            return f"{product.name} is already on your wish list."
        self.wishlist.append({"id": product_id, "variant": variant})
        return f"Saved {product.name} to your wish list."

    def _wish(self, index: int) -> dict:
        if not 0 <= index < len(self.wishlist):
            raise ShopError("that wish list item no longer exists")
        return self.wishlist[index]

    def remove_from_wishlist(self, index: int) -> str:
        item = self._wish(index)
        self.wishlist.pop(index)
        return f"Removed {self.product(item['id']).name} from your wish list."

    def move_to_cart(self, index: int) -> str:
        item = self._wish(index)
        message = self.add_to_cart(item["id"], item["variant"], 1)
        self.wishlist.pop(index)
        return message.replace("Added", "Moved", 1)

    # -- checkout and orders ---------------------------------------------------------------------------
    def place_order(self, address: str, delivery: str, payment: str) -> dict:
        """Turn the cart into an order (raises :class:`ShopError` when a choice is missing or the cart is empty)."""
        if not self.cart:
            raise ShopError("your cart is empty")
        missing = [what for what, value in (("a shipping address", address), ("a delivery option", delivery),
                                            ("a payment method", payment)) if not value]
        if missing:
            raise ShopError("choose " + " and ".join(missing))
        self.address(address)
        self.payment(payment)
        if delivery not in DELIVERY:
            raise ShopError(f"unknown delivery option {delivery!r}")
        items = [{"id": x["id"], "variant": x["variant"], "qty": x["qty"], "price": self.product(x["id"]).price}
                 for x in self.cart]
        subtotal = self.subtotal()
        shipping = self.shipping(delivery, subtotal)
        self.orders_placed += 1
        order = {"id": f"O-{self.profile_id[2:]}-N{self.orders_placed}", "date": "2026-11-30", "items": items,
                 "address": address, "delivery": delivery, "payment": payment, "subtotal": subtotal,
                 "shipping": shipping, "total": round(subtotal + shipping, 2), "status": "processing",
                 "placed": "episode"}
        self.orders.append(order)
        self.cart = []
        return order

    def cancel_order(self, order_id: str) -> str:
        order = self.order(order_id)
        if order["status"] != "processing":
            raise ShopError(f"order {order_id} is {order['status']} and can no longer be cancelled")
        order["status"] = "cancelled"
        return f"Order {order_id} was cancelled."

    def reorder(self, order_id: str) -> str:
        order = self.order(order_id)
        added = []
        for item in order["items"]:
            product = self.product(item["id"])
            if product.stock > 0:
                self.add_to_cart(item["id"], item["variant"], min(item["qty"], product.stock))
                added.append(product.name)
        if not added:
            raise ShopError("none of the items of this order is in stock")
        return f"Added the items of order {order_id} to your cart."

    # -- account -----------------------------------------------------------------------------------------
    def set_default_address(self, label: str) -> str:
        self.address(label)
        self.account["default_address"] = label
        return f"Your default shipping address is now {label}."

    def add_address(self, label: str, street: str, city: str, zip_code: str) -> str:
        values = {"label": label.strip().lower(), "street": street.strip(), "city": city.strip(),
                  "zip": zip_code.strip()}
        empty = [k for k, v in values.items() if not v]
        if empty:
            raise ShopError(f"fill in {', '.join(empty)}")
        if any(a["label"] == values["label"] for a in self.addresses):
            raise ShopError(f"you already have an address named {values['label']}")
        self.addresses.append({**values, "name": self.account["name"]})
        return f"Saved the address {values['label']}."

    def set_preferences(self, newsletter: bool, preferred_delivery: str) -> str:
        if preferred_delivery and preferred_delivery not in DELIVERY:
            raise ShopError(f"unknown delivery option {preferred_delivery!r}")
        self.account["newsletter"] = bool(newsletter)
        if preferred_delivery:
            self.account["preferred_delivery"] = preferred_delivery
        return "Your preferences were saved."

    # -- the state as data -----------------------------------------------------------------------------
    def _item(self, x: dict, **extra) -> dict:
        return {**self.product(x["id"]).as_item(), "variant": x["variant"], **extra}

    def summary(self) -> dict:
        """The whole state as JSON: what the checks and the judge read, and what transcripts record."""
        payments = {p["id"]: p["label"] for p in self.profile.payments}
        return {
            "profile_id": self.profile_id, "page": dict(self.page), "form": dict(self.form),
            "cart": [self._item(x, qty=x["qty"]) for x in self.cart], "cart_total": self.subtotal(),
            "wishlist": [self._item(x) for x in self.wishlist],
            "orders": [{**{k: o[k] for k in ("id", "date", "address", "delivery", "subtotal", "shipping", "total",
                                              "status", "placed")},
                        "payment": o["payment"], "payment_label": payments.get(o["payment"], o["payment"]),
                        "items": [self._item(i, qty=i["qty"], price=i["price"]) for i in o["items"]]}
                       for o in self.orders],
            "account": {**self.account, "addresses": [dict(a) for a in self.addresses],
                        "payments": [dict(p) for p in self.profile.payments]},
            "visited": [dict(v) for v in self.visited],
        }

    def cart_text(self) -> str:
        """One line per cart line (for messages): ``Name (variant) ×2 $45.99``."""
        return "; ".join(f"{self.product(x['id']).name} ({x['variant']}) ×{x['qty']} {money(self.product(x['id']).price)}"
                         for x in self.cart) or "empty"
