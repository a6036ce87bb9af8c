"""The state-check vocabulary: validation with JSON paths, evaluation on a state summary, messages naming what was
seen, and the reward of a task."""

from __future__ import annotations

import pytest

from evaluations.prebuilt.shop.checks import evaluate, reward_of, validate
from evaluations.prebuilt.shop.data import content
from evaluations.prebuilt.shop.state import ShopState

HEADPHONES_UNDER_50 = {"check": "cart_count", "where": {"category": "headphones", "price_lt": 50}, "op": "==",
                       "value": 1}
HOME_EXPRESS = {"check": "order_placed", "where": {"address": "home", "delivery": "express"}}


def cheap_headphones():
    return next(p for p in content(0).products if p.category == "headphones" and p.price < 50 and p.stock > 0)


def state(profile: str = "U_001") -> ShopState:
    return ShopState.start(content(0), profile)


def test_the_issue_examples_pass_and_fail_on_state():
    s = state()
    p = cheap_headphones()
    assert [r["passed"] for r in evaluate([HEADPHONES_UNDER_50, HOME_EXPRESS], s.summary())] == [False, False]
    s.add_to_cart(p.id, p.variants[0])
    first, second = evaluate([HEADPHONES_UNDER_50, HOME_EXPRESS], s.summary())
    assert first["passed"] and first["name"] == "cart_count(category=headphones, price_lt=50) == 1"
    assert first["detail"] == (f"1 cart items matching category=headphones, price_lt=50 (cart: {p.name} "
                               f"({p.variants[0]}) ×1 ${p.price:.2f}); expected == 1")
    assert not second["passed"] and "no order was placed during the episode" in second["detail"]
    s.place_order("home", "express", "card-1")
    results = evaluate([HEADPHONES_UNDER_50, HOME_EXPRESS], s.summary())
    assert [r["passed"] for r in results] == [False, True]  # the cart was emptied by the order
    assert results[1]["kind"] == "state" and results[1]["check"]["check"] == "order_placed"
    assert "to home, express" in results[1]["detail"] and results[1]["score"] == 1.0


def test_past_orders_count_only_when_asked():
    s = state()
    past = s.orders[0]
    assert not evaluate([{"check": "order_count", "where": {"id": past["id"]}}], s.summary())[0]["passed"]
    for placed in ("before", "any"):
        check = {"check": "order_count", "where": {"id": past["id"], "placed": placed}, "op": "==", "value": 1}
        assert evaluate([check], s.summary())[0]["passed"]


@pytest.mark.parametrize(("check", "passes"), [
    ({"check": "account", "field": "newsletter", "value": False}, True),
    ({"check": "account", "field": "default_address", "op": "!=", "value": "home"}, False),
    ({"check": "address_exists", "where": {"label": "HOME"}}, True),
    ({"check": "address_exists", "where": {"label": "cabin"}}, False),
    ({"check": "page", "is": "home"}, False),
    ({"check": "visited", "is": "home"}, False),
    ({"check": "cart_total", "op": "<", "value": 1}, True),
    ({"check": "wishlist_count", "op": "==", "value": 0}, True),
    ({"check": "form_value", "field": "q", "value": ""}, False),
])
def test_checks_of_every_kind_read_the_summary(check, passes):
    assert validate([check]) == []
    assert evaluate([check], state().summary())[0]["passed"] is passes


def test_page_form_and_visited_checks_read_what_the_browser_showed():
    s = state()
    p = content(0).products[0]
    s.page = {"kind": "product", "product": p.as_item()}
    s.form = {"q": "wireless headphones", "qty": "1"}
    s.visited = [{"kind": "search", "query": "wireless headphones", "sort": "price_asc"}, dict(s.page)]
    checks = [{"check": "page", "is": "product", "where": {"id": p.id, "brand": p.brand.upper()}},
              {"check": "visited", "is": "search", "where": {"query_contains": "wireless", "sort": "price_asc"}},
              {"check": "form_value", "field": "q", "op": "contains", "value": "HEADPHONES"},
              {"check": "page", "is": "product", "where": {"price_gt": 100000}}]
    assert validate(checks) == []
    results = evaluate(checks, s.summary())
    assert [r["passed"] for r in results] == [True, True, True, False]
    assert results[3]["detail"].startswith(f"the final page is product of {p.name} ({p.id}")


@pytest.mark.parametrize(("verifiers", "errors"), [
    ("cart_count", [("verifiers", "must be a list of checks")]),
    ([{"check": "cart_count"}] * 51, [("verifiers", "at most 50 checks")]),
    ([7], [("verifiers[0]", 'must be an object with a "check" field')]),
    ([{"check": "teleport"}], [("verifiers[0].check", None)]),
    ([{"check": "cart_count", "op": "~", "value": -1, "unit": "kg"}],
     [("verifiers[0].op", None), ("verifiers[0].value", "must be an integer >= 0"), ("verifiers[0].unit", None)]),
    ([{"check": "cart_total"}], [("verifiers[0].value", "must be a number")]),
    ([{"check": "page", "is": "moon"}], [("verifiers[0].is", None)]),
    ([{"check": "page", "is": "search", "where": {"sort": "random"}}], [("verifiers[0].where.sort", None)]),
    ([{"check": "order_placed", "where": {"contains": [{"category": "boats"}, {"price_lt": True}]}}],
     [("verifiers[0].where.contains[0].category", None), ("verifiers[0].where.contains[1].price_lt", "must be a number")]),
    ([{"check": "account", "field": "password", "value": 3}],
     [("verifiers[0].field", None), ("verifiers[0].value", None)]),
    ([{"check": "address_exists"}], [("verifiers[0].where", None)]),
    ([{"check": "wishlist_contains", "where": {"colour": "red"}, "name": ""}],
     [("verifiers[0].name", None), ("verifiers[0].where.colour", None)]),
    ([{"check": "form_value", "field": "", "op": "<", "value": None}],
     [("verifiers[0].field", None), ("verifiers[0].op", None), ("verifiers[0].value", None)]),
    ([{"check": "cart_contains", "op": "=="}], [("verifiers[0].op", "unknown field for cart_contains")]),
])
def test_invalid_checks_are_reported_with_their_paths(verifiers, errors):
    found = validate(verifiers)
    assert sorted(e["path"] for e in found) == sorted(path for path, _ in errors)
    for path, message in errors:
        if message:
            assert {"path": path, "message": message} in found


def test_the_reward_is_the_fraction_passed_unless_the_task_says_all():
    results = [{"passed": True}, {"passed": False}, {"passed": True}, {"passed": True}]
    assert reward_of(results) == 0.75 and reward_of(results, "all") == 0.0
    assert reward_of(results[:1], "all") == 1.0 and reward_of([]) == 0.0
