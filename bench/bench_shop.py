"""The offline shop's costs next to MiniWoB's, and the reference agent's pass rate per shop task family (one run,
not a timed test; real Chromium, in-process envs except for memory).

Prints (milliseconds unless noted):

1. latency: ``make()`` + first ``reset`` (Chromium start; the shop also starts its server), later ``reset``s, and
   step latency per tool, p50/p95, for MiniWoB ``login-user`` and the shop (``type_text`` into the search box,
   ``click`` on a radio that stays on the page, ``click`` on a link that loads another page, ``press_key``,
   ``wait(0)``);
2. memory: PSS (``/proc/<pid>/smaps_rollup``) of one served env's process tree (python + chromedriver + Chromium)
   after a reset, and for the shop after 20 more steps;
3. the reference agent (:func:`evaluations.agents.reference_agent.decide`, on the same GOAL/DOM text it receives
   through any endpoint) on every catalog task: passed / tasks per family, mean steps, step p50.

Usage: ``.venv/bin/python bench/bench_shop.py [--resets 10] [--steps 10] [--skip-memory] [--families cart,search]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_agents import fmt, free_port, pct, start, stop, tree_pss_mb  # noqa: E402 - after the path tweak

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def call(tool: str, **arguments) -> str:
    return json.dumps({"tool": tool, "arguments": arguments})


def ref_of(dom: str, needle: str) -> int:
    line = next(line for line in dom.splitlines() if needle in line)
    return int(line.strip().split("]")[0][1:])


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def miniwob_latency(resets: int, steps: int) -> dict[str, list[float]]:
    from evaluations.prebuilt.miniwob import MiniWoB

    t0 = time.perf_counter()
    env = MiniWoB().make(task="login-user")
    obs, _ = env.reset(seed=0)
    times: dict[str, list[float]] = {"first": [(time.perf_counter() - t0) * 1000], "reset": []}
    for seed in range(1, resets + 1):
        times["reset"].append(timed(lambda: env.reset(seed=seed)))
    obs, _ = env.reset(seed=0)
    actions = {"type_text": call("type_text", ref=ref_of(obs["dom"], "id=username"), text="ab"),
               "click (same page)": call("click", ref=ref_of(obs["dom"], "label")),
               "press_key": call("press_key", key="<Backspace>"), "wait(0)": call("wait", ms=0)}
    for _ in range(steps):
        for name, action in actions.items():
            times.setdefault(name, []).append(timed(lambda: env.step(action)))
    env.close()
    return times


def shop_latency(resets: int, steps: int) -> dict[str, list[float]]:
    from evaluations.prebuilt.shop import Shop

    t0 = time.perf_counter()
    env = Shop().make(task="shop.cart.t007")  # "Add k units of <product> in <variant>": a product with variants
    obs, _ = env.reset(seed=0)
    times: dict[str, list[float]] = {"first": [(time.perf_counter() - t0) * 1000], "reset": []}
    for seed in range(1, resets + 1):
        times["reset"].append(timed(lambda: env.reset(seed=seed)))
    product = env.task.verifiers[0]["where"]["id"]
    for _ in range(steps):
        env.reset(seed=0)
        obs = env._last
        box = ref_of(obs["dom"], "id=search-box")
        times.setdefault("type_text", []).append(timed(lambda: env.step(call("type_text", ref=box, text="ab"))))
        times.setdefault("press_key", []).append(timed(lambda: env.step(call("press_key", key="<Backspace>"))))
        times.setdefault("wait(0)", []).append(timed(lambda: env.step(call("wait", ms=0))))
        env._driver.get(f"{env._server.url}/product/{product}")
        obs = env._observe(env._settle())
        radio = ref_of(obs["dom"], "id=variant-1")
        times.setdefault("click (same page)", []).append(timed(lambda: env.step(call("click", ref=radio))))
        link = ref_of(obs["dom"], "id=product-category")
        times.setdefault("click (loads a page)", []).append(timed(lambda: env.step(call("click", ref=link))))
    env.close()
    return times


def latency(resets: int, steps: int) -> None:
    rows = {"MiniWoB login-user": miniwob_latency(resets, steps), "shop": shop_latency(resets, steps)}
    for env_name, times in rows.items():
        print(f"{env_name}: make + first reset {times.pop('first')[0]:7.0f} ms")
        for name, values in times.items():
            print(f"  {name:22s} {fmt(values)}")


def memory() -> None:
    import rlmesh

    for label, factory, kwargs in (("MiniWoB login-user", "evaluations.prebuilt.miniwob:MiniWoB", {"task": "login-user"}),
                                   ("shop", "evaluations.prebuilt.shop:Shop", {"task": "shop.checkout.t001"})):
        port = free_port()
        proc = start([sys.executable, "-m", "rlmesh.serve", "--env", factory, "--address", f"127.0.0.1:{port}",
                      "--kwargs-json", json.dumps(kwargs)], f"mem-{port}", port)
        try:
            env = rlmesh.numpy.RemoteEnv(f"127.0.0.1:{port}", connect_timeout_seconds=10)
            obs, _ = env.reset(seed=0)
            print(f"mem  {label:20s} after a reset: PSS {tree_pss_mb(proc.pid):5.0f} MB", end="")
            if label == "shop":
                from evaluations.agents.reference_agent import decide

                for _ in range(20):
                    obs, *_ = env.step(json.dumps(decide(str(obs["goal"]), str(obs["dom"]))))
                print(f"; after 20 more steps {tree_pss_mb(proc.pid):5.0f} MB", end="")
            print()
            env.close()
        finally:
            stop(proc)


def pass_rates(families: list[str]) -> None:
    from evaluations.agents.reference_agent import decide
    from evaluations.prebuilt.shop import Shop
    from evaluations.prebuilt.shop.tasks import catalog

    env = Shop().make(task="shop.search.t001")
    stats: dict[str, dict] = {}
    for task in catalog(0).values():
        if families and task.family not in families:
            continue
        env.configure(task)
        obs, info = env.reset(seed=0)
        row = stats.setdefault(task.family, {"passed": 0, "tasks": 0, "steps": [], "ms": [], "failed": []})
        for steps in range(1, task.max_steps + 1):
            action = json.dumps(decide(obs["goal"], obs["dom"]))
            t = time.perf_counter()
            obs, reward, terminated, truncated, info = env.step(action)
            row["ms"].append((time.perf_counter() - t) * 1000)
            if terminated or truncated:
                break
        row["tasks"] += 1
        row["passed"] += bool(info["is_success"])
        row["steps"].append(steps)
        if not info["is_success"]:
            row["failed"].append(task.id)
    env.close()
    total = sum(r["passed"] for r in stats.values()), sum(r["tasks"] for r in stats.values())
    for family, r in stats.items():
        print(f"ref  shop.{family:9s} {r['passed']:3d}/{r['tasks']:3d} passed  mean steps "
              f"{sum(r['steps']) / len(r['steps']):4.1f}  step p50 {pct(r['ms'], 0.5):5.0f} ms"
              + (f"  failed: {', '.join(r['failed'])}" if r["failed"] else ""))
    print(f"ref  all            {total[0]:3d}/{total[1]:3d} passed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resets", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--families", default="", help="comma-separated families for the pass rates (default all)")
    args = parser.parse_args()
    latency(args.resets, args.steps)
    if not args.skip_memory:
        memory()
    pass_rates([f for f in args.families.split(",") if f])


if __name__ == "__main__":
    main()
