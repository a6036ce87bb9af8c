"""The state-check vocabulary (``shop.state.v1``): small JSON checks on the shop's final state, in which the task
catalog is written and which a user may send with an open run (``verifiers``).

A verifier list is a JSON array (at most :data:`MAX_CHECKS`) of objects, each with ``"check"`` (the kind below),
an optional ``"name"`` (≤ 100 characters; default: generated from the check), and the kind's fields. Every check
is evaluated on the state after the last step; ``passed`` when it holds. Counting checks take ``op`` (``==``,
``!=``, ``<``, ``<=``, ``>``, ``>=``; default ``>=``) and ``value`` (an integer ≥ 0; default 1).

===================  ==========================================================================================
check                fields
===================  ==========================================================================================
``cart_count``       ``where`` (product clause), ``op``, ``value``, ``unit``: ``items`` (sum of quantities,
                     default) or ``lines``: how many cart items match
``cart_contains``    ``where``: at least one matching cart item (``cart_count >= 1``)
``cart_total``       ``op``, ``value`` (a number): the cart's subtotal in dollars
``wishlist_count``   ``where``, ``op``, ``value``: how many wish-list items match
``wishlist_contains`` ``where``: at least one matching wish-list item
``order_count``      ``where`` (order clause), ``op``, ``value``: how many orders match
``order_placed``     ``where``: at least one order placed during the episode matches (``order_count >= 1``)
``page``             ``is`` (a page kind), optional ``where`` (page clause): the page shown at the end
``visited``          ``is``, optional ``where``: such a page was shown at some step of the episode
``account``          ``field`` (``default_address``, ``default_payment``, ``newsletter``,
                     ``preferred_delivery``, ``name``, ``email``), ``op`` (``==``/``!=``), ``value``
``address_exists``   ``where`` (address clause): the account has a matching address
``form_value``       ``field`` (a form field's name on the final page), ``op`` (``==``, ``!=``,
                     ``contains``), ``value``: what the browser shows in it (unsubmitted input counts)
===================  ==========================================================================================

Clauses (every key optional; all given keys must hold; strings compare case-insensitively):

- **product** (cart, wish list, order items, a product page): ``id``, ``name``, ``name_contains``, ``brand``,
  ``category`` (a category slug, e.g. ``headphones``), ``variant``, ``price_lt``, ``price_lte``, ``price_gt``,
  ``price_gte`` (dollars), ``rating_gte``, ``in_stock`` (bool).
- **order**: ``id``, ``address`` (an address label: ``home``, ``work``, or one the user added), ``delivery``
  (``standard``, ``express``, ``next_day``), ``payment`` (a card id ``card-1``, its label ``Visa ending 4242`` or
  its brand ``visa``), ``status`` (``processing``, ``shipped``, ``delivered``, ``cancelled``), ``placed``
  (``episode``: during this rollout, the default; ``before``: the profile's history; ``any``), ``contains`` (a
  product clause, or a list of them: each must match an item), ``total_lt``/``total_lte``/``total_gt``/
  ``total_gte``.
- **address**: ``label``, ``street``, ``city``, ``zip``, ``name``.
- **page** (``page``/``visited``): the product clause for product pages; ``query``, ``query_contains``,
  ``category``, ``brand``, ``sort`` (``relevance``, ``price_asc``, ``price_desc``, ``rating``, ``name``),
  ``min_price``, ``max_price``, ``min_rating`` for search and category pages; ``order`` (an order id) for
  ``order`` and ``order_confirmation`` pages.

Page kinds: ``home``, ``search``, ``category``, ``product``, ``cart``, ``checkout``, ``order_confirmation``,
``orders``, ``order``, ``wishlist``, ``account``.

Example: ``[{"check": "cart_count", "where": {"category": "headphones", "price_lt": 50}, "op": "==", "value": 1},
{"check": "order_placed", "where": {"address": "home", "delivery": "express"}}]``.

:func:`validate` returns ``[{"path", "message"}]`` (``verifiers[2].op``); :func:`evaluate` returns one result per
check: ``{"name", "kind": "state", "check", "passed", "score", "detail"}`` where ``detail`` names what was seen.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from .data import CATEGORIES, DELIVERY

__all__ = ["CHECK_KINDS", "MAX_CHECKS", "PAGE_KINDS", "VOCABULARY", "evaluate", "reward_of", "validate"]

VOCABULARY = "shop.state.v1"
MAX_CHECKS = 50
PAGE_KINDS = ("home", "search", "category", "product", "cart", "checkout", "order_confirmation", "orders", "order",
              "wishlist", "account")
ORDER_STATUSES = ("processing", "shipped", "delivered", "cancelled")
SORTS = ("relevance", "price_asc", "price_desc", "rating", "name")
ACCOUNT_FIELDS = ("default_address", "default_payment", "newsletter", "preferred_delivery", "name", "email")
_OPS: dict[str, Callable[[Any, Any], bool]] = {"==": operator.eq, "!=": operator.ne, "<": operator.lt,
                                                "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_NUM = (int, float)
#: Clause key → (type(s), what it checks). ``str`` keys compare case-insensitively.
PRODUCT_KEYS: dict[str, tuple] = {
    "id": (str,), "name": (str,), "name_contains": (str,), "brand": (str,), "category": (str,), "variant": (str,),
    "price_lt": _NUM, "price_lte": _NUM, "price_gt": _NUM, "price_gte": _NUM, "rating_gte": _NUM,
    "in_stock": (bool,),
}
ORDER_KEYS: dict[str, tuple] = {
    "id": (str,), "address": (str,), "delivery": (str,), "payment": (str,), "status": (str,), "placed": (str,),
    "contains": (dict, list), "total_lt": _NUM, "total_lte": _NUM, "total_gt": _NUM, "total_gte": _NUM,
}
ADDRESS_KEYS: dict[str, tuple] = {k: (str,) for k in ("label", "street", "city", "zip", "name")}
PAGE_KEYS: dict[str, tuple] = {**PRODUCT_KEYS, "query": (str,), "query_contains": (str,), "sort": (str,),
                               "min_price": _NUM, "max_price": _NUM, "min_rating": _NUM, "order": (str,)}
_ENUMS = {("order", "delivery"): tuple(DELIVERY), ("order", "status"): ORDER_STATUSES,
          ("order", "placed"): ("episode", "before", "any"), ("product", "category"): tuple(c.slug for c in CATEGORIES),
          ("page", "sort"): SORTS}
#: Kind → (allowed fields, the clause ``where`` holds or None).
CHECK_KINDS: dict[str, tuple[frozenset, str | None]] = {
    "cart_count": (frozenset({"where", "op", "value", "unit"}), "product"),
    "cart_contains": (frozenset({"where"}), "product"),
    "cart_total": (frozenset({"op", "value"}), None),
    "wishlist_count": (frozenset({"where", "op", "value"}), "product"),
    "wishlist_contains": (frozenset({"where"}), "product"),
    "order_count": (frozenset({"where", "op", "value"}), "order"),
    "order_placed": (frozenset({"where"}), "order"),
    "page": (frozenset({"is", "where"}), "page"),
    "visited": (frozenset({"is", "where"}), "page"),
    "account": (frozenset({"field", "op", "value"}), None),
    "address_exists": (frozenset({"where"}), "address"),
    "form_value": (frozenset({"field", "op", "value"}), None),
}
_CLAUSES = {"product": PRODUCT_KEYS, "order": ORDER_KEYS, "address": ADDRESS_KEYS, "page": PAGE_KEYS}


# ----------------------------------------------------------------------------------------------- validation
def _type_name(types: tuple) -> str:
    names = {bool: "true or false", str: "a string", dict: "an object", list: "a list", int: "a number",
             float: "a number"}
    return " or ".join(dict.fromkeys(names[t] for t in types))


def _is(value: Any, types: tuple) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)


def _clause_errors(clause: Any, kind: str, path: str) -> list[dict]:
    if not isinstance(clause, dict):
        return [{"path": path, "message": "must be an object"}]
    keys = _CLAUSES[kind]
    errors = []
    for key, value in clause.items():
        where = f"{path}.{key}"
        if key not in keys:
            errors.append({"path": where, "message": f"unknown {kind} field (known: {', '.join(keys)})"})
        elif not _is(value, keys[key]):
            errors.append({"path": where, "message": f"must be {_type_name(keys[key])}"})
        elif key == "contains":
            items = value if isinstance(value, list) else [value]
            for i, item in enumerate(items):
                errors += _clause_errors(item, "product", f"{where}[{i}]" if isinstance(value, list) else where)
        else:
            allowed = _ENUMS.get((kind, key)) or (_ENUMS.get(("product", key)) if kind == "page" else None)
            if allowed and str(value).lower() not in allowed:
                errors.append({"path": where, "message": f"must be one of {', '.join(allowed)}"})
    return errors


def _count_errors(check: dict, path: str, numeric: bool = False) -> list[dict]:
    errors = []
    op = check.get("op", ">=")
    if op not in _OPS:
        errors.append({"path": f"{path}.op", "message": f"must be one of {', '.join(_OPS)}"})
    value = check.get("value", 1)
    if numeric:
        if not _is(value, _NUM) or "value" not in check:
            errors.append({"path": f"{path}.value", "message": "must be a number"})
    elif not isinstance(value, int) or isinstance(value, bool) or value < 0:
        errors.append({"path": f"{path}.value", "message": "must be an integer >= 0"})
    return errors


def _kind_errors(kind: str, check: dict, path: str) -> list[dict]:
    if kind in ("cart_count", "wishlist_count", "order_count"):
        errors = _count_errors(check, path)
        if kind == "cart_count" and check.get("unit", "items") not in ("items", "lines"):
            errors.append({"path": f"{path}.unit", "message": "must be items or lines"})
        return errors
    if kind == "cart_total":
        return _count_errors(check, path, numeric=True)
    if kind in ("page", "visited"):
        if check.get("is") not in PAGE_KINDS:
            return [{"path": f"{path}.is", "message": f"must be one of {', '.join(PAGE_KINDS)}"}]
        return []
    if kind == "address_exists" and not check.get("where"):
        return [{"path": f"{path}.where", "message": "must name at least one address field"}]
    if kind == "account":
        errors = [] if check.get("field") in ACCOUNT_FIELDS else [
            {"path": f"{path}.field", "message": f"must be one of {', '.join(ACCOUNT_FIELDS)}"}]
        if check.get("op", "==") not in ("==", "!="):
            errors.append({"path": f"{path}.op", "message": "must be == or !="})
        if not _is(check.get("value"), (str, bool)):
            errors.append({"path": f"{path}.value", "message": "must be a string or true/false"})
        return errors
    if kind == "form_value":
        errors = [] if isinstance(check.get("field"), str) and check["field"] else [
            {"path": f"{path}.field", "message": "must be a form field's name"}]
        if check.get("op", "==") not in ("==", "!=", "contains"):
            errors.append({"path": f"{path}.op", "message": "must be ==, != or contains"})
        if not _is(check.get("value"), (str, bool, int, float)):
            errors.append({"path": f"{path}.value", "message": "must be a string, number or true/false"})
        return errors
    return []


def _check_errors(check: Any, path: str) -> list[dict]:
    if not isinstance(check, dict):
        return [{"path": path, "message": "must be an object with a \"check\" field"}]
    kind = check.get("check")
    if kind not in CHECK_KINDS:
        return [{"path": f"{path}.check", "message": f"unknown check {kind!r} (known: {', '.join(CHECK_KINDS)})"}]
    fields, clause = CHECK_KINDS[kind]
    errors = [{"path": f"{path}.{k}", "message": f"unknown field for {kind}"}
              for k in check if k not in fields | {"check", "name"}]
    name = check.get("name")
    if name is not None and (not isinstance(name, str) or not 1 <= len(name) <= 100):
        errors.append({"path": f"{path}.name", "message": "must be a string of 1-100 characters"})
    if clause and "where" in check:
        errors += _clause_errors(check["where"], clause, f"{path}.where")
    return errors + _kind_errors(kind, check, path)


def validate(verifiers: Any, path: str = "verifiers") -> list[dict]:
    """Errors of a verifier list as ``[{"path", "message"}]`` (empty: every check is valid)."""
    if not isinstance(verifiers, list):
        return [{"path": path, "message": "must be a list of checks"}]
    if len(verifiers) > MAX_CHECKS:
        return [{"path": path, "message": f"at most {MAX_CHECKS} checks"}]
    errors: list[dict] = []
    for i, check in enumerate(verifiers):
        errors += _check_errors(check, f"{path}[{i}]")
    return errors


# ----------------------------------------------------------------------------------------------- evaluation
def _same(a: Any, b: Any) -> bool:
    return str(a).strip().lower() == str(b).strip().lower()


def product_matches(item: dict, where: dict) -> bool:
    """Whether a product-like dict (``id``, ``name``, ``brand``, ``category``, ``variant``, ``price``, ``rating``,
    ``in_stock``) satisfies a product clause."""
    for key, want in where.items():
        if key in ("id", "name", "brand", "category", "variant"):
            if not _same(item.get(key, ""), want):
                return False
        elif key == "name_contains":
            if str(want).lower() not in str(item.get("name", "")).lower():
                return False
        elif key.startswith("price_") or key == "rating_gte":
            field, op = ("rating", ">=") if key == "rating_gte" else ("price", {"lt": "<", "lte": "<=", "gt": ">",
                                                                                  "gte": ">="}[key[6:]])
            if item.get(field) is None or not _OPS[op](float(item[field]), float(want)):
                return False
        elif key == "in_stock" and bool(item.get("in_stock")) != want:
            return False
    return True


def _payment_matches(order: dict, want: str) -> bool:
    label = str(order.get("payment_label", ""))
    return _same(order.get("payment"), want) or _same(label, want) or _same(label.split(" ")[0], want)


def order_matches(order: dict, where: dict) -> bool:
    """Whether an order (from the state summary) satisfies an order clause (``placed`` defaults to episode)."""
    placed = where.get("placed", "episode")
    if placed != "any" and order.get("placed") != placed:
        return False
    for key, want in where.items():
        if key in ("id", "address", "delivery", "status") and not _same(order.get(key), want):
            return False
        if key == "payment" and not _payment_matches(order, want):
            return False
        if key.startswith("total_"):
            op = {"lt": "<", "lte": "<=", "gt": ">", "gte": ">="}[key[6:]]
            if not _OPS[op](float(order["total"]), float(want)):
                return False
        if key == "contains":
            for clause in want if isinstance(want, list) else [want]:
                if not any(product_matches(i, clause) for i in order.get("items", [])):
                    return False
    return True


def _page_matches(page: dict, where: dict) -> bool:
    product = page.get("product")
    for key, want in where.items():
        if key in PRODUCT_KEYS and product is not None:
            if not product_matches(product, {key: want}):
                return False
        elif key == "query_contains":
            if str(want).lower() not in str(page.get("query", "")).lower():
                return False
        elif key in ("min_price", "max_price", "min_rating"):
            try:
                if float(page.get(key)) != float(want):
                    return False
            except (TypeError, ValueError):
                return False
        elif not _same(page.get(key, ""), want):
            return False
    return True


def _describe(where: dict | None) -> str:
    """``category=headphones, price_lt=50``; nested clauses in parentheses: ``contains=(id=P034)``."""
    def text(value: Any) -> str:
        if isinstance(value, dict):
            return f"({_describe(value)})"
        if isinstance(value, list):
            return "[" + "; ".join(text(v) for v in value) + "]"
        return str(value)

    return ", ".join(f"{k}={text(v)}" for k, v in (where or {}).items()) or "anything"


def _items_text(items: list[dict], limit: int = 4) -> str:
    parts = [f"{i['name']}" + (f" ({i['variant']})" if i.get("variant") else "") + (f" ×{i['qty']}" if "qty" in i
             else "") + f" ${i['price']:.2f}" for i in items[:limit]]
    return "; ".join(parts) + (f"; … {len(items) - limit} more" if len(items) > limit else "")


def _count(check: dict, matched: int, noun: str, seen: str) -> tuple[bool, str]:
    op, value = check.get("op", ">="), check.get("value", 1)
    passed = _OPS[op](matched, value)
    return passed, f"{matched} {noun} matching {_describe(check.get('where'))} ({seen}); expected {op} {value}"


def _run_cart(kind: str, check: dict, state: dict) -> tuple[bool, str]:
    cart = state.get("cart", [])
    if kind == "cart_total":
        total = float(state.get("cart_total", 0.0))
        passed = _OPS[check.get("op", ">=")](total, float(check["value"]))
        return passed, f"cart subtotal ${total:.2f} ({_items_text(cart) or 'empty cart'}); expected {check.get('op', '>=')} {check['value']}"
    hits = [i for i in cart if product_matches(i, check.get("where") or {})]
    lines = check.get("unit") == "lines"
    matched = len(hits) if lines else sum(i["qty"] for i in hits)
    seen = f"cart: {_items_text(cart)}" if cart else "the cart is empty"
    return _count({**check, "op": check.get("op", ">="), "value": check.get("value", 1)}, matched,
                  "cart lines" if lines else "cart items", seen)


def _run_lists(kind: str, check: dict, state: dict) -> tuple[bool, str]:
    if kind.startswith("wishlist"):
        items = state.get("wishlist", [])
        hits = [i for i in items if product_matches(i, check.get("where") or {})]
        seen = f"wish list: {_items_text(items)}" if items else "the wish list is empty"
        return _count(check, len(hits), "wish-list items", seen)
    orders = state.get("orders", [])
    hits = [o for o in orders if order_matches(o, check.get("where") or {})]
    new = [o for o in orders if o.get("placed") == "episode"]
    seen = "; ".join(f"{o['id']}: {o['status']}, to {o['address']}, {o['delivery']}, {o['payment_label']}, "
                     f"${o['total']:.2f}, {_items_text(o['items'], 2)}" for o in (hits or new)[:3])
    seen = seen or "no order was placed during the episode"
    return _count(check, len(hits), "orders", seen)


def _run_page(kind: str, check: dict, state: dict) -> tuple[bool, str]:
    want, where = check["is"], check.get("where") or {}
    if kind == "page":
        page = state.get("page") or {}
        passed = page.get("kind") == want and _page_matches(page, where)
        return passed, f"the final page is {_page_text(page)}; expected {want}" + (f" with {_describe(where)}"
                                                                                   if where else "")
    pages = state.get("visited") or []
    hit = next((p for p in pages if p.get("kind") == want and _page_matches(p, where)), None)
    seen = f"saw {_page_text(hit)}" if hit else f"no such page among the {len(pages)} pages shown"
    return hit is not None, f"{seen}; expected a {want} page" + (f" with {_describe(where)}" if where else "")


def _page_text(page: dict | None) -> str:
    if not page:
        return "unknown"
    product = page.get("product")
    params = {k: v for k, v in page.items() if k not in ("kind", "product") and v not in ("", None)}
    text = page.get("kind", "unknown")
    if product:
        text += f" of {product['name']} ({product['id']}, ${product['price']:.2f})"
    return text + (f" ({_describe(params)})" if params else "")


def _run_account(kind: str, check: dict, state: dict) -> tuple[bool, str]:
    account = state.get("account") or {}
    if kind == "address_exists":
        where = check["where"]
        addresses = account.get("addresses", [])
        hit = any(all(_same(a.get(k, ""), v) for k, v in where.items()) for a in addresses)
        seen = "; ".join(f"{a['label']}: {a['street']}, {a['city']} {a['zip']}" for a in addresses)
        return hit, f"addresses: {seen or 'none'}; expected one with {_describe(where)}"
    source = account if kind == "account" else state.get("form") or {}
    field, op, want = check["field"], check.get("op", "=="), check["value"]
    have = source.get(field)
    if op == "contains":
        passed = str(want).lower() in str(have or "").lower()
    else:
        same = _same(have, want) if not isinstance(want, bool) else have is want
        passed = same if op == "==" else not same
    where = "account" if kind == "account" else "form field"
    return passed, f"{where} {field} is {have!r}; expected {op} {want!r}"


_RUNNERS = {"cart_count": _run_cart, "cart_contains": _run_cart, "cart_total": _run_cart,
            "wishlist_count": _run_lists, "wishlist_contains": _run_lists, "order_count": _run_lists,
            "order_placed": _run_lists, "page": _run_page, "visited": _run_page, "account": _run_account,
            "address_exists": _run_account, "form_value": _run_account}


def default_name(check: dict) -> str:
    """A readable name for a check without one, e.g. ``cart_count(category=headphones, price_lt=50) == 1``."""
    kind = check["check"]
    where = f"({_describe(check['where'])})" if check.get("where") else ""
    if kind in ("page", "visited"):
        return f"{kind} is {check['is']}{where}"
    if kind in ("account", "form_value"):
        return f"{kind} {check['field']} {check.get('op', '==')} {check['value']}"
    if kind in ("cart_count", "wishlist_count", "order_count", "cart_total"):
        return f"{kind}{where} {check.get('op', '>=')} {check.get('value', 1)}"
    return f"{kind}{where}"


def evaluate(verifiers: list[dict], state: dict) -> list[dict]:
    """Run valid checks (see :func:`validate`) on a state summary; one result per check, in order."""
    results = []
    for check in verifiers:
        kind = check["check"]
        if kind in ("cart_contains", "wishlist_contains", "order_placed"):
            check = {**check, "op": ">=", "value": 1}
        passed, detail = _RUNNERS[kind](kind, check, state)
        results.append({"name": check.get("name") or default_name(check), "kind": "state", "check": check,
                        "passed": bool(passed), "score": 1.0 if passed else 0.0, "detail": detail})
    return results


def reward_of(results: list[dict], mode: str = "fraction") -> float:
    """The reward of evaluated checks: the fraction passed (``mode`` ``fraction``), or 1/0 (``all``)."""
    if not results:
        return 0.0
    passed = sum(1 for r in results if r["passed"])
    if mode == "all":
        return 1.0 if passed == len(results) else 0.0
    return round(passed / len(results), 6)
