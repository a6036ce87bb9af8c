"""The shop's content, generated deterministically from a seed: ≈300 products in 12 categories and the user
profiles ``U_001``…``U_050``.

Everything comes from ``random.Random`` seeded with strings (seeded through SHA-512, so the same in every process
whatever ``PYTHONHASHSEED`` is) and is built in a fixed order: :func:`content` for one seed is identical across
processes and runs. Pure data; no I/O.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field

__all__ = ["CATEGORIES", "DELIVERY", "Category", "Content", "Product", "Profile", "content", "money"]


@dataclass(frozen=True)
class Category:
    slug: str
    name: str
    nouns: tuple[str, ...]
    price: tuple[float, float]
    brands: tuple[str, ...]
    #: Variant choices products of this category pick from (``("Standard",)``: none).
    variants: tuple[str, ...]


CATEGORIES: tuple[Category, ...] = (
    Category("headphones", "Headphones", ("Over-Ear Headphones", "Wireless Earbuds", "On-Ear Headphones",
                                           "Noise-Cancelling Headphones"), (15, 350),
             ("Sonix", "Auralis", "Bassline", "Nordtone"), ("Black", "White", "Blue", "Red")),
    Category("speakers", "Speakers", ("Bluetooth Speaker", "Smart Speaker", "Bookshelf Speakers", "Soundbar"),
             (20, 400), ("Boomly", "Sonix", "Echora", "Vantor"), ("Black", "Grey", "Green")),
    Category("laptops", "Laptops", ("14-inch Laptop", "13-inch Ultrabook", "16-inch Gaming Laptop"), (400, 2500),
             ("Corevo", "Lumio", "Nexbook", "Altair"), ("8 GB", "16 GB", "32 GB")),
    Category("phones", "Phones", ("Smartphone", "Phone Pro", "Phone Mini"), (150, 1300),
             ("Pixelon", "Novacell", "Orbit", "Lumio"), ("128 GB", "256 GB", "512 GB")),
    Category("cameras", "Cameras", ("Mirrorless Camera", "Action Camera", "Instant Camera"), (60, 1800),
             ("Optik", "Shutterly", "Kameo", "Vistar"), ("Black", "Silver")),
    Category("watches", "Watches", ("Smartwatch", "Fitness Tracker", "Analog Watch"), (30, 600),
             ("Tempo", "Chronis", "Pulsar", "Orbit"), ("Black", "Silver", "Rose")),
    Category("shoes", "Shoes", ("Running Shoes", "Trail Shoes", "Sneakers"), (40, 200),
             ("Stride", "Trailix", "Kinetic", "Paceo"), ("EU 40", "EU 41", "EU 42", "EU 43", "EU 44", "EU 45")),
    Category("backpacks", "Backpacks", ("Daypack", "Laptop Backpack", "Hiking Pack"), (25, 250),
             ("Nomad", "Packwell", "Trailix", "Urbano"), ("Black", "Olive", "Navy")),
    Category("coffee-makers", "Coffee Makers", ("Espresso Machine", "Drip Coffee Maker", "French Press"),
             (20, 900), ("Brewster", "Crema", "Moka", "Dripwell"), ("Standard",)),
    Category("keyboards", "Keyboards", ("Mechanical Keyboard", "Wireless Keyboard", "Compact Keyboard"), (20, 250),
             ("Keyra", "Clacktron", "Typewell", "Nexus"), ("US", "UK", "DE")),
    Category("monitors", "Monitors", ("27-inch Monitor", "24-inch Monitor", "Ultrawide Monitor"), (120, 1200),
             ("Vistar", "Pixelon", "Clarion", "Lumio"), ("Standard",)),
    Category("lamps", "Desk Lamps", ("LED Desk Lamp", "Clamp Lamp", "Floor Lamp"), (15, 180),
             ("Glowa", "Lumen", "Brightly", "Halo"), ("White", "Black", "Brass")),
)
PRODUCTS_PER_CATEGORY = 25
_MODELS = ("Aria", "Pulse", "Echo", "Nova", "Zen", "Flux", "Edge", "Air", "Max", "Lite", "Wave", "Peak", "Drift",
           "Core", "Prime", "Vibe", "Apex", "Quest", "Bolt", "Sky", "Terra", "Ion", "Luma", "Orbit", "Vector")
_FIRST = ("Ada", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kira", "Liam", "Maya",
          "Noah", "Olivia", "Pavel", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wen", "Ximena", "Yusuf")
_LAST = ("Adams", "Brooks", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jensen", "Kowalski",
         "Lopez", "Moreau", "Nakamura", "Okafor", "Petrov", "Quint", "Rossi", "Silva", "Tanaka", "Ueda", "Vargas")
_STREETS = ("Elm Street", "Maple Avenue", "Harbor Road", "Cedar Lane", "Mill Road", "Station Street", "Park Avenue",
            "River Walk", "Oak Drive", "Church Lane", "High Street", "Lake View")
_CITIES = (("Springfield", "10001"), ("Riverton", "20452"), ("Lakeside", "30117"), ("Fairview", "40218"),
           ("Brookfield", "50341"), ("Ashford", "60724"), ("Westbury", "70813"), ("Northgate", "80926"))
_REVIEWS = ("Does exactly what it says.", "Great value for the price.", "Stopped working after a month.",
            "Better than I expected.", "Solid build, fast delivery.", "Not for me, returned it.",
            "Would buy again.", "The colour is a bit different from the photos.", "Excellent quality.",
            "Decent, but the manual is confusing.")
#: Delivery options: key → (label, price, days). Standard delivery is free from ``FREE_SHIPPING_FROM``.
DELIVERY: dict[str, tuple[str, float, str]] = {
    "standard": ("Standard", 4.99, "5-7 business days"),
    "express": ("Express", 9.99, "2 business days"),
    "next_day": ("Next day", 19.99, "next business day"),
}
FREE_SHIPPING_FROM = 50.0
CARD_BRANDS = ("Visa", "Mastercard", "Amex")


def money(value: float) -> str:
    """``$1,234.50`` (what the pages show)."""
    return f"${value:,.2f}"


@dataclass(frozen=True)
class Product:
    id: str
    name: str
    brand: str
    category: str
    price: float
    rating: float
    review_count: int
    stock: int
    variants: tuple[str, ...]
    description: str
    reviews: tuple[tuple[str, int, str], ...] = ()

    def as_item(self) -> dict:
        """The product's fields the state checks read (``where`` clauses)."""
        return {"id": self.id, "name": self.name, "brand": self.brand, "category": self.category,
                "price": self.price, "rating": self.rating, "in_stock": self.stock > 0}


@dataclass(frozen=True)
class Profile:
    """A user of the shop: who they are, where they ship, how they pay, what they like and bought."""

    id: str
    name: str
    email: str
    addresses: tuple[dict, ...]
    default_address: str
    payments: tuple[dict, ...]
    default_payment: str
    newsletter: bool
    preferred_delivery: str
    favorite_categories: tuple[str, ...]
    orders: tuple[dict, ...] = field(default=())


@dataclass(frozen=True)
class Content:
    """One seed's catalog and profiles."""

    seed: int
    products: tuple[Product, ...]
    profiles: tuple[Profile, ...]

    @functools.cached_property
    def by_id(self) -> dict[str, Product]:
        return {p.id: p for p in self.products}

    @functools.cached_property
    def profile_ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.profiles)

    def profile(self, profile_id: str) -> Profile:
        """The profile with this id; raises KeyError naming the valid range."""
        for p in self.profiles:
            if p.id == profile_id:
                return p
        raise KeyError(f"unknown profile {profile_id!r} (profiles are U_001 … U_{len(self.profiles):03d})")

    def in_category(self, slug: str) -> list[Product]:
        return [p for p in self.products if p.category == slug]


def _price(rng: random.Random, lo: float, hi: float) -> float:
    # Prices cluster in the low part of the range (many cheap items, a few expensive), ending in .99.
    return round(int(lo + (hi - lo) * rng.random() ** 2) + 0.99, 2)


def _products(seed: int) -> tuple[Product, ...]:
    rng = random.Random(f"rlmesh-shop-{seed}-products")
    out: list[Product] = []
    names: set[str] = set()
    for cat in CATEGORIES:
        for _ in range(PRODUCTS_PER_CATEGORY):
            brand, noun = rng.choice(cat.brands), rng.choice(cat.nouns)
            name = f"{brand} {rng.choice(_MODELS)} {noun}"
            n = 2
            while name in names:
                name, n = f"{brand} {rng.choice(_MODELS)} {n} {noun}", n + 1
            names.add(name)
            k = 1 if cat.variants == ("Standard",) else rng.randint(1, min(3, len(cat.variants)))
            variants = tuple(sorted(rng.sample(cat.variants, k), key=cat.variants.index))
            stock = 0 if rng.random() < 0.1 else rng.randint(1, 40)
            reviews = tuple((rng.choice(_FIRST), rng.randint(1, 5), rng.choice(_REVIEWS)) for _ in range(rng.randint(0, 3)))
            out.append(Product(
                id=f"P{len(out) + 1:03d}", name=name, brand=brand, category=cat.slug,
                price=_price(rng, *cat.price), rating=round(min(5.0, max(1.0, rng.gauss(4.0, 0.6))), 1),
                review_count=rng.randint(len(reviews), 2400), stock=stock, variants=variants,
                description=f"{noun} by {brand}, model {name.split()[1]}.", reviews=reviews))
    return tuple(out)


def _address(rng: random.Random, label: str, name: str) -> dict:
    city, zip_code = rng.choice(_CITIES)
    return {"label": label, "name": name, "street": f"{rng.randint(1, 250)} {rng.choice(_STREETS)}", "city": city,
            "zip": zip_code}


def _orders(rng: random.Random, number: int, products: tuple[Product, ...], addresses: tuple[dict, ...],
            payments: tuple[dict, ...]) -> tuple[dict, ...]:
    orders = []
    count = rng.randint(1, 4)
    for _ in range(count):
        picks = rng.sample(products, rng.randint(1, 3))
        items = [{"id": p.id, "variant": rng.choice(p.variants), "qty": rng.randint(1, 2), "price": p.price}
                 for p in picks]
        delivery = rng.choice(tuple(DELIVERY))
        subtotal = round(sum(i["price"] * i["qty"] for i in items), 2)
        shipping = 0.0 if delivery == "standard" and subtotal >= FREE_SHIPPING_FROM else DELIVERY[delivery][1]
        orders.append({"id": "", "date": f"2026-{rng.randint(1, 10):02d}-{rng.randint(1, 28):02d}",
                       "items": items, "address": rng.choice(addresses)["label"], "delivery": delivery,
                       "payment": rng.choice(payments)["id"], "subtotal": subtotal, "shipping": shipping,
                       "total": round(subtotal + shipping, 2), "status": "delivered"})
    orders.sort(key=lambda o: o["date"])
    for k, order in enumerate(orders, start=1):  # numbered oldest first
        order["id"] = f"O-{number:03d}-{k}"
    orders[-1]["status"] = "processing" if rng.random() < 0.6 else "shipped"  # only the latest is still open
    return tuple(orders)


def _profiles(seed: int, products: tuple[Product, ...], count: int = 50) -> tuple[Profile, ...]:
    rng = random.Random(f"rlmesh-shop-{seed}-profiles")
    out = []
    for n in range(1, count + 1):
        name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
        addresses = [_address(rng, "home", name)]
        if rng.random() < 0.6:
            addresses.append(_address(rng, "work", name))
        payments = []
        for i, brand in enumerate(rng.sample(CARD_BRANDS, rng.randint(1, 3)), start=1):
            last4 = f"{rng.randint(0, 9999):04d}"
            payments.append({"id": f"card-{i}", "brand": brand, "last4": last4, "label": f"{brand} ending {last4}"})
        out.append(Profile(
            id=f"U_{n:03d}", name=name, email=f"{name.lower().replace(' ', '.')}@example.org",
            addresses=tuple(addresses), default_address="work" if len(addresses) > 1 and rng.random() < 0.2 else "home",
            payments=tuple(payments), default_payment="card-1", newsletter=rng.random() < 0.4,
            preferred_delivery=rng.choice(tuple(DELIVERY)),
            favorite_categories=tuple(c.slug for c in rng.sample(CATEGORIES, 2)),
            orders=_orders(rng, n, products, tuple(addresses), tuple(payments))))
    return tuple(out)


@functools.lru_cache(maxsize=8)
def content(seed: int = 0) -> Content:
    """The catalog and profiles of ``seed`` (cached; identical in every process)."""
    products = _products(seed)
    return Content(seed=seed, products=products, profiles=_profiles(seed, products))
