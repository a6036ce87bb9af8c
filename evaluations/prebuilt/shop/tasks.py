"""The shop's task catalog: 120 templated tasks in five families, each a goal sentence, a signed-in profile, an
optional pre-filled cart or wish list, and verifiers in the state-check vocabulary (:mod:`.checks`).

======================  ======================================================================================
family                  templates (24 tasks each)
======================  ======================================================================================
``shop.search.tNNN``    search a product by name and open it; open the cheapest product of a brand in a
                        category; show a category filtered by brand and sorted by price
``shop.cart.tNNN``      add a product; add k units of a variant; add any item of a category under a price;
                        remove a product from a pre-filled cart; change a quantity in it
``shop.checkout.tNNN``  buy a product to an address with a delivery option; check out a pre-filled cart with
                        a delivery, an address and a card; buy the cheapest of a brand with express delivery
``shop.account.tNNN``   (un)subscribe the newsletter or set the preferred delivery; make an address the default;
                        add an address; cancel an order still being processed
``shop.wishlist.tNNN``  save a product; remove one from a pre-filled wish list; move one to the cart; save the
                        best-rated product of a category
======================  ======================================================================================

Tasks are generated from the content seed in a fixed order (``random.Random`` seeded with a string), so one seed
always gives the same ids, goals, profiles and checks. The reward is the fraction of checks passed unless a task
says ``reward="all"``.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field

from .data import CATEGORIES, DELIVERY, Content, Product, content

__all__ = ["FAMILIES", "OPEN_TASK_ID", "ShopTask", "catalog", "open_task"]

OPEN_TASK_ID = "shop.open"
FAMILIES: dict[str, str] = {
    "search": "Find products with search, categories, filters and sorting, and open the right page.",
    "cart": "Put the right products, variants and quantities in the cart (some start with a filled cart).",
    "checkout": "Place an order with the right items, shipping address, delivery option and payment method.",
    "account": "Change account settings: newsletter, default address, new addresses, cancelling an order.",
    "wishlist": "Save products to the wish list, remove them, or move them to the cart.",
}
_DELIVERY_WORDS = {"standard": "standard", "express": "express", "next_day": "next-day"}
_NEW_LABELS = ("parents", "cabin", "studio", "office", "gym", "garage")
_CITY_ZIP = (("Oakridge", "90210"), ("Milford", "11822"), ("Pinecrest", "33156"), ("Dunmore", "18512"))


@dataclass(frozen=True)
class ShopTask:
    """One task: ``verifiers`` None means none (an open task without checks: the rollout is unverified)."""

    id: str
    family: str
    goal: str
    profile_id: str
    verifiers: list | None
    max_steps: int
    initial: dict = field(default_factory=dict)
    reward: str = "fraction"


def open_task(task_definition: str, *, profile_id: str, verifiers: list | None, max_steps: int) -> ShopTask:
    """The task of an open run: the user's free-text goal, their profile and (optionally) their checks."""
    return ShopTask(OPEN_TASK_ID, "open", task_definition, profile_id, verifiers or None, max_steps)


class _Builder:
    """Draws the products and profiles of one seed's tasks, in a fixed order."""

    def __init__(self, c: Content):
        self.c = c
        self.rng = random.Random(f"rlmesh-shop-{c.seed}-tasks")
        self.tasks: list[ShopTask] = []
        self.counts: dict[str, int] = {}

    def add(self, family: str, goal: str, profile: str, verifiers: list, max_steps: int, **kw) -> None:
        n = self.counts[family] = self.counts.get(family, 0) + 1
        self.tasks.append(ShopTask(f"shop.{family}.t{n:03d}", family, goal, profile, verifiers, max_steps, **kw))

    def product(self, pred=lambda p: True) -> Product:
        return self.rng.choice([p for p in self.c.products if p.stock > 0 and pred(p)])

    def profile(self, pred=lambda p: True) -> str:
        return self.rng.choice([p for p in self.c.profiles if pred(p)]).id

    def cheapest(self, category: str, brand: str) -> Product | None:
        group = sorted((p for p in self.c.in_category(category) if p.brand == brand), key=lambda p: p.price)
        if len(group) < 2 or group[0].price == group[1].price:
            return None
        return group[0]

    def cart_lines(self, n: int) -> list[dict]:
        picks = self.rng.sample([p for p in self.c.products if p.stock >= 5], n)
        return [{"id": p.id, "variant": self.rng.choice(p.variants), "qty": self.rng.randint(1, 2)} for p in picks]


def _search(b: _Builder) -> None:
    for _ in range(8):
        p = b.product()
        query = " ".join(p.name.split()[:2])
        b.add("search", f'Search for "{query}" and open the product page of the {p.name}.', b.profile(),
              [{"check": "page", "is": "product", "where": {"id": p.id}}], 8)
    pairs = [(c, brand) for c in CATEGORIES for brand in c.brands if b.cheapest(c.slug, brand)]
    for cat, brand in b.rng.sample(pairs, 8):
        p = b.cheapest(cat.slug, brand)
        b.add("search", f"Open the cheapest product by {brand} in the {cat.name} category.", b.profile(),
              [{"check": "page", "is": "product", "where": {"id": p.id}}], 10)
    for cat, brand in b.rng.sample(pairs, 8):
        b.add("search", f"On the {cat.name} category page, show only {brand} products sorted by price, highest "
              "first.", b.profile(),
              [{"check": "page", "is": "category", "where": {"category": cat.slug, "brand": brand,
                                                               "sort": "price_desc"}}], 10)


def _cart(b: _Builder) -> None:
    for _ in range(6):
        p = b.product()
        b.add("cart", f"Add the {p.name} to your cart.", b.profile(),
              [{"check": "cart_count", "where": {"id": p.id}, "op": "==", "value": 1},
               {"check": "cart_count", "op": "==", "value": 1}], 10)
    for _ in range(6):
        p = b.product(lambda x: len(x.variants) > 1 and x.stock >= 3)
        k, variant = b.rng.randint(2, 3), b.rng.choice(p.variants)
        b.add("cart", f"Add {k} units of the {p.name} in {variant} to your cart.", b.profile(),
              [{"check": "cart_count", "where": {"id": p.id, "variant": variant}, "op": "==", "value": k},
               {"check": "cart_count", "op": "==", "value": k}], 12)
    for cat in b.rng.sample(CATEGORIES, 4):
        prices = sorted(p.price for p in b.c.in_category(cat.slug) if p.stock > 0)
        limit = int(prices[len(prices) // 3]) + 1
        b.add("cart", f"Browse {cat.name.lower()} and add any item under ${limit} to your cart.", b.profile(),
              [{"check": "cart_count", "where": {"category": cat.slug, "price_lt": limit}, "op": "==", "value": 1},
               {"check": "cart_count", "op": "==", "value": 1}], 10)
    for _ in range(4):
        lines = b.cart_lines(3)
        gone = b.rng.choice(lines)
        b.add("cart", f"Remove the {b.c.by_id[gone['id']].name} from your cart.", b.profile(),
              [{"check": "cart_count", "where": {"id": gone["id"]}, "op": "==", "value": 0},
               {"check": "cart_count", "unit": "lines", "op": "==", "value": 2}], 6, initial={"cart": lines})
    for _ in range(4):
        lines = b.cart_lines(2)
        line = b.rng.choice(lines)
        k = line["qty"] + b.rng.randint(1, 2)
        b.add("cart", f"Change the quantity of the {b.c.by_id[line['id']].name} in your cart to {k}.", b.profile(),
              [{"check": "cart_count", "where": {"id": line["id"]}, "op": "==", "value": k},
               {"check": "cart_count", "unit": "lines", "op": "==", "value": 2}], 10, initial={"cart": lines})


def _checkout(b: _Builder) -> None:
    for i in range(8):
        p = b.product()
        label = "work" if i % 2 else "home"
        profile = b.profile(lambda x: any(a["label"] == label for a in x.addresses))
        delivery = ("express", "next_day", "standard", "express")[i % 4]
        b.add("checkout", f"Buy the {p.name} and have it shipped to your {label} address with "
              f"{_DELIVERY_WORDS[delivery]} delivery.", profile,
              [{"check": "order_placed", "where": {"contains": {"id": p.id}, "address": label, "delivery": delivery}},
               {"check": "page", "is": "order_confirmation"}], 16)
    for i in range(8):
        profile = b.c.profile(b.profile(lambda x: len(x.payments) > 1 and len(x.addresses) > 1))
        card, label = b.rng.choice(profile.payments[1:]), b.rng.choice(profile.addresses)["label"]
        delivery = b.rng.choice(tuple(DELIVERY))
        lines = b.cart_lines(2)
        b.add("checkout", f"Check out your cart with {_DELIVERY_WORDS[delivery]} delivery to your {label} address, "
              f"paying with your {card['label']}.", profile.id,
              [{"check": "order_placed", "where": {"address": label, "delivery": delivery, "payment": card["id"],
                                                   "contains": [{"id": x["id"]} for x in lines]}},
               {"check": "cart_count", "op": "==", "value": 0}], 12, initial={"cart": lines})
    pairs = [(c, brand) for c in CATEGORIES for brand in c.brands
             if b.cheapest(c.slug, brand) and b.cheapest(c.slug, brand).stock > 0]
    for cat, brand in b.rng.sample(pairs, 8):
        p = b.cheapest(cat.slug, brand)
        profile = b.c.profile(b.profile())
        b.add("checkout", f"Buy the cheapest product by {brand} in the {cat.name} category with express delivery "
              "to your default address.", profile.id,
              [{"check": "order_placed", "where": {"contains": {"id": p.id}, "delivery": "express",
                                                   "address": profile.default_address}},
               {"check": "order_count", "op": "==", "value": 1}], 20)


def _account(b: _Builder) -> None:
    for i in range(6):
        if i < 4:
            want = i % 2 == 0
            profile = b.profile(lambda x: x.newsletter != want)
            b.add("account", "Subscribe to the newsletter." if want else "Unsubscribe from the newsletter.", profile,
                  [{"check": "account", "field": "newsletter", "value": want}], 6)
        else:
            delivery = ("express", "next_day")[i % 2]
            profile = b.profile(lambda x: x.preferred_delivery != delivery)
            b.add("account", f"Set your preferred delivery option to {_DELIVERY_WORDS[delivery]}.", profile,
                  [{"check": "account", "field": "preferred_delivery", "value": delivery}], 6)
    for profile in b.rng.sample([p for p in b.c.profiles if len(p.addresses) > 1], 6):  # six different users
        label = next(a["label"] for a in profile.addresses if a["label"] != profile.default_address)
        b.add("account", f"Make your {label} address your default shipping address.", profile.id,
              [{"check": "account", "field": "default_address", "value": label}], 6)
    for _ in range(6):
        label, (city, zip_code) = b.rng.choice(_NEW_LABELS), b.rng.choice(_CITY_ZIP)
        street = f"{b.rng.randint(2, 99)} {b.rng.choice(('Birch Road', 'Hill Street', 'Bay Avenue', 'Mill Lane'))}"
        b.add("account", f'Add a new address named "{label}": {street}, {city} {zip_code}.', b.profile(),
              [{"check": "address_exists", "where": {"label": label, "street": street, "city": city,
                                                     "zip": zip_code}}], 12)
    open_orders = [p for p in b.c.profiles if p.orders[-1]["status"] == "processing"]
    for profile in b.rng.sample(open_orders, 6):
        order = profile.orders[-1]["id"]
        b.add("account", f"Cancel your order {order}.", profile.id,
              [{"check": "order_count", "where": {"id": order, "status": "cancelled", "placed": "any"},
                "op": "==", "value": 1}], 8)


def _wishlist(b: _Builder) -> None:
    for _ in range(8):
        p = b.product()
        b.add("wishlist", f"Add the {p.name} to your wish list.", b.profile(),
              [{"check": "wishlist_contains", "where": {"id": p.id}},
               {"check": "cart_count", "op": "==", "value": 0}], 8)
    for move in (False, True):
        for _ in range(6):
            items = [{"id": x["id"], "variant": x["variant"]} for x in b.cart_lines(3)]
            item = b.rng.choice(items)
            name = b.c.by_id[item["id"]].name
            if move:
                b.add("wishlist", f"Move the {name} from your wish list to your cart.", b.profile(),
                      [{"check": "cart_contains", "where": {"id": item["id"]}},
                       {"check": "wishlist_count", "where": {"id": item["id"]}, "op": "==", "value": 0}], 6,
                      initial={"wishlist": items})
            else:
                b.add("wishlist", f"Remove the {name} from your wish list.", b.profile(),
                      [{"check": "wishlist_count", "where": {"id": item["id"]}, "op": "==", "value": 0},
                       {"check": "wishlist_count", "op": "==", "value": 2}], 6, initial={"wishlist": items})
    for cat in b.rng.sample(CATEGORIES, 4):
        ranked = sorted(b.c.in_category(cat.slug), key=lambda p: (-p.rating, -p.review_count, p.id))
        b.add("wishlist", f"Save the best-rated product in the {cat.name} category to your wish list.", b.profile(),
              [{"check": "wishlist_contains", "where": {"id": ranked[0].id}},
               {"check": "wishlist_count", "op": "==", "value": 1}], 10)


@functools.lru_cache(maxsize=8)
def catalog(seed: int = 0) -> dict[str, ShopTask]:
    """Task id → task for the content of ``seed`` (120 tasks; identical in every process)."""
    b = _Builder(content(seed))
    for family in (_search, _cart, _checkout, _account, _wishlist):
        family(b)
    return {t.id: t for t in b.tasks}
