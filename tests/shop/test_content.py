"""The shop's seeded content and task catalog: the sizes the issue asks for, and the same bytes in every process."""

from __future__ import annotations

import collections
import hashlib
import json
import subprocess
import sys

from evaluations.prebuilt.shop import PROFILE_IDS, SCENARIOS, Shop
from evaluations.prebuilt.shop.checks import validate
from evaluations.prebuilt.shop.data import CATEGORIES, content
from evaluations.prebuilt.shop.tasks import FAMILIES, catalog

from ..agents.conftest import ROOT, child_env

FINGERPRINT = """
import dataclasses, hashlib, json
from evaluations.prebuilt.shop.data import content
from evaluations.prebuilt.shop.tasks import catalog
c = content(SEED)
blob = json.dumps([[dataclasses.asdict(p) for p in c.products], [dataclasses.asdict(p) for p in c.profiles],
                   [dataclasses.asdict(t) for t in catalog(SEED).values()]], sort_keys=True, default=list)
print(hashlib.sha256(blob.encode()).hexdigest())
"""


def fingerprint_here(seed: int) -> str:
    import dataclasses

    c = content(seed)
    blob = json.dumps([[dataclasses.asdict(p) for p in c.products], [dataclasses.asdict(p) for p in c.profiles],
                       [dataclasses.asdict(t) for t in catalog(seed).values()]], sort_keys=True, default=list)
    return hashlib.sha256(blob.encode()).hexdigest()


def test_the_content_has_300_products_in_12_categories_and_50_profiles():
    c = content(0)
    assert len(c.products) == 300 and len(CATEGORIES) == 12
    per_category = collections.Counter(p.category for p in c.products)
    assert set(per_category.values()) == {25} and "headphones" in per_category
    assert any(p.category == "headphones" and p.price < 50 and p.stock > 0 for p in c.products)
    assert 0 < sum(p.stock == 0 for p in c.products) < 60  # some products are out of stock
    assert len({p.name for p in c.products}) == 300 and all(p.variants for p in c.products)
    assert c.profile_ids == PROFILE_IDS and PROFILE_IDS[0] == "U_001" and PROFILE_IDS[-1] == "U_050"
    for profile in c.profiles:
        assert profile.name and profile.addresses[0]["label"] == "home" and profile.payments and profile.orders
        assert profile.default_address in {a["label"] for a in profile.addresses}
        assert all(o["items"] and o["status"] in ("delivered", "shipped", "processing") for o in profile.orders)


def test_the_catalog_has_at_least_100_valid_tasks_in_five_families():
    tasks = catalog(0)
    assert len(tasks) >= 100
    assert collections.Counter(t.family for t in tasks.values()) == {f: 24 for f in FAMILIES}
    # No two tasks are the same (goal, user and starting cart/wish list): account goals repeat for other users.
    assert len({(t.goal, t.profile_id, json.dumps(t.initial)) for t in tasks.values()}) == len(tasks)
    for task_id, task in tasks.items():
        assert task_id == f"shop.{task.family}.t{int(task_id[-3:]):03d}"
        assert validate(task.verifiers) == [], task_id
        assert task.profile_id in PROFILE_IDS and 1 <= task.max_steps <= 30
    assert set(SCENARIOS) == set(tasks) | {"shop.open"}
    variants = {v.id: v for v in Shop.enumerate_variants()}
    assert variants["shop.cart.t001"].params == {"task": "shop.cart.t001"}


def test_content_and_goals_are_identical_across_processes():
    script = FINGERPRINT.replace("SEED", "0")
    other = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=child_env(PYTHONHASHSEED="12345"),
                           capture_output=True, text=True, check=True).stdout.strip()
    assert other == fingerprint_here(0)
    assert fingerprint_here(1) != fingerprint_here(0)  # another seed is another shop


def test_a_task_id_and_seed_give_the_same_goal_and_catalog():
    first = Shop().make(task="shop.checkout.t003", seed=0)
    second = Shop().make(task="shop.checkout.t003", seed=0)
    assert first.task == second.task and first.content is second.content
    other_seed = Shop().make(task="shop.checkout.t003", seed=7)
    assert other_seed.content.seed == 7 and other_seed.task.goal != first.task.goal
