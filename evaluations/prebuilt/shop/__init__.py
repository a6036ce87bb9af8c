"""An offline web shop, built to be evaluated against: served by the env process, driven in Debian's Chromium with
the same observation renderer and the same five tools as MiniWoB (one env family, one message contract).

Served like the other prebuilt envs (``prebuilt/shop``, ``python://evaluations.prebuilt.shop:Shop``)::

    python -m rlmesh.serve --env evaluations.prebuilt.shop:Shop --address 127.0.0.1:7401 \\
        --kwargs-json '{"task": "shop.cart.t013"}'

**The shop** (:mod:`.app`, :mod:`.pages`, :mod:`.pages_account`): home, search with category/brand/price/rating/
stock filters and sorting, category pages, product pages (variants, stock, rating, reviews), cart (quantities,
remove), checkout (shipping address, delivery option, payment), order confirmation, order history (cancel, buy
again), wish list, account (addresses, default address, preferences). Plain HTML links and forms, rendered
server-side from content generated from a seed (:mod:`.data`: 300 products in 12 categories, profiles ``U_001``
… ``U_050`` with addresses, saved cards, preferences and past orders). The task's profile is signed in.

**Make params**: ``task`` (a catalog id ``shop.<family>.tNNN``, or ``open``), ``profile_id`` (default: the task's;
``U_001`` for open tasks), ``seed`` (the content seed, default 0: the published catalog), ``task_definition``
(the goal of an ``open`` task, 1–2,000 characters), ``verifiers`` (a JSON list in the state-check vocabulary of
:mod:`.checks`; open tasks only; empty: none), ``max_steps`` (0: the task's), ``screenshot``.

**Observation**: exactly MiniWoB's keys: ``goal`` (the task's goal sentence), ``dom`` (the page's elements in the
contract format of :mod:`evaluations.agents.observation`), ``error``, ``meta`` (``{"episode", "step", "task",
"tools"}``), ``raw`` (``{"utterance", "fields": [], "dom_elements"}``) and, with ``screenshot``, a 400×300 RGB
``screenshot`` of the browser window. **Action**: the same JSON tool call (``click``, ``type_text``,
``press_key``, ``wait``, ``finish``); invalid calls are fed back as ``ERROR:`` observations.

**Ending and reward**: ``finish`` ends the episode (``terminated``, ``info["terminal_action"]``); the step cap
truncates it (``info["max_steps_reached"]``); ``__endpoint_error__`` truncates it with ``info["endpoint_error"]``.
The shop never ends an episode by itself: placing an order is not finishing. The verifiers are evaluated on the
state (not on anything the agent says) after every step; the episode's last step pays the reward (the fraction
of checks passed, or 1/0 for a task with ``reward="all"``). Every info has ``verifiers`` (one result per check:
``name``, ``kind: "state"``, ``check``, ``passed``, ``score``, ``detail`` naming what it saw), ``verdict``
(``state``, or ``unverified`` for an open task without checks, whose ``is_success`` is null), ``is_success``
(all checks pass), ``raw_reward``, ``page``, ``tool_result``, ``error``; the last step's also ``shop_state``, the
whole state summary (cart, wish list, orders, account, page, form values, pages visited).
"""

from __future__ import annotations

import json

import rlmesh

from .checks import VOCABULARY, validate
from .tasks import FAMILIES, OPEN_TASK_ID, ShopTask, catalog, open_task

__all__ = ["MAX_DEFINITION_CHARS", "OPEN_MAX_STEPS", "PROFILE_IDS", "SCENARIOS", "VARIANTS", "Shop", "scenarios"]

TOOLS: tuple[str, ...] = ("click", "type_text", "press_key", "wait", "finish")
MAX_DEFINITION_CHARS = 2000
#: Default step cap of an open task (a run may set 1–1,000).
OPEN_MAX_STEPS = 20
PROFILE_IDS: tuple[str, ...] = tuple(f"U_{n:03d}" for n in range(1, 51))


def scenarios(seed: int = 0) -> list[dict]:
    """The catalog scenarios (what ``GET /agents/evaluations/tasks`` lists) plus the open task ``shop.open``."""
    out = [{"id": t.id, "name": f"Shop {t.family} {t.id.rsplit('.', 1)[1]}", "params": {"task": t.id},
            "instruction": t.goal, "description": FAMILIES[t.family], "tools": list(TOOLS), "maxSteps": t.max_steps,
            "profileId": t.profile_id, "verifiers": t.verifiers, "family": t.family}
           for t in catalog(seed).values()]
    out.append({"id": OPEN_TASK_ID, "name": "Shop open task", "params": {"task": "open"}, "requires": ["task_definition"],
                "instruction": "(the run's task_definition)", "tools": list(TOOLS), "maxSteps": OPEN_MAX_STEPS,
                "description": "An open run's free-text task (POST /agents/runs/open), judged by the run's verifiers "
                "(state checks), else its judge, else recorded unverified.",
                "open": {"profiles": list(PROFILE_IDS), "defaultProfile": "U_001", "vocabulary": VOCABULARY,
                         "maxDefinitionChars": MAX_DEFINITION_CHARS}})
    return out


SCENARIOS: dict[str, dict] = {s["id"]: s for s in scenarios()}
VARIANTS: dict[str, dict] = {sid: dict(s["params"]) for sid, s in SCENARIOS.items()}


def _task(task: str, profile_id: str, seed: int, task_definition: str, verifiers: str, max_steps: int) -> ShopTask:
    """The task a make call names; raises ValueError with what is wrong."""
    if profile_id and profile_id not in PROFILE_IDS:
        raise ValueError(f"unknown profile_id {profile_id!r} (U_001 … U_050)")
    if task == "open":
        if not 1 <= len(task_definition.strip()) <= MAX_DEFINITION_CHARS:
            raise ValueError(f"an open task needs a task_definition of 1-{MAX_DEFINITION_CHARS} characters")
        checks = json.loads(verifiers) if verifiers else None
        errors = validate(checks) if checks is not None else []
        if errors:
            raise ValueError("; ".join(f"{e['path']}: {e['message']}" for e in errors))
        return open_task(task_definition.strip(), profile_id=profile_id or "U_001", verifiers=checks,
                         max_steps=max_steps or OPEN_MAX_STEPS)
    tasks = catalog(seed)
    if task not in tasks:
        raise ValueError(f"unknown shop task {task!r} (ids shop.<family>.tNNN, or open)")
    if task_definition or verifiers:
        raise ValueError("task_definition and verifiers are for open tasks (task='open') only")
    found = tasks[task]
    if profile_id and profile_id != found.profile_id:
        found = ShopTask(found.id, found.family, found.goal, profile_id, found.verifiers, found.max_steps,
                         found.initial, found.reward)
    return found


class Shop(rlmesh.EnvFactory):
    """The offline web shop: one catalog task per variant (``shop.<family>.tNNN``) or an open task; see the
    package docstring for the observation, action, reward and info contract."""

    workflow_edition = "2026.06"
    params = rlmesh.ParamSpec(
        rlmesh.Param("task", str, description="A task id shop.<family>.tNNN, or open", group="task"),
        rlmesh.Param("profile_id", str, description="The signed-in user U_001 … U_050 (default: the task's)",
                     group="task"),
        rlmesh.Param("seed", int, description="Content seed (0: the published catalog)", group="task"),
        rlmesh.Param("task_definition", str, description="An open task's goal (free text)", group="task"),
        rlmesh.Param("verifiers", str, description="An open task's checks: a JSON list (shop.state.v1)",
                     group="task"),
        rlmesh.Param("max_steps", int, description="Steps after which the env truncates (0: the task's)",
                     group="task"),
        rlmesh.Param("screenshot", bool, description="Add a 400x300 RGB screenshot as 'screenshot'",
                     group="observation"),
    )

    def make(  # type: ignore[override]
        self, task: str = "shop.search.t001", profile_id: str = "", seed: int = 0, task_definition: str = "",
        verifiers: str = "", max_steps: int = 0, screenshot: bool = False,
    ):
        if int(max_steps) < 0:
            raise ValueError("max_steps must be >= 0")
        found = _task(task, profile_id, int(seed), task_definition, verifiers, int(max_steps))
        from .data import content
        from .env import ShopToolEnv

        return ShopToolEnv(found, content(int(seed)), max_steps=int(max_steps) or found.max_steps,
                           screenshot=bool(screenshot), tools=TOOLS)

    @classmethod
    def enumerate_variants(cls):
        for sid, s in SCENARIOS.items():
            yield rlmesh.Variant(sid, dict(s["params"]), name=s["name"], instruction=s["instruction"],
                                 description=s["description"], max_steps=s["maxSteps"], tools=list(TOOLS))
