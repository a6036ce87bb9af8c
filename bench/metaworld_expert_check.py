"""Scripted expert vs. random actions on Meta-World tasks, in-process through the prebuilt factory.

Run with the Meta-World venv (``bash scripts/setup-metaworld.sh`` first)::

    .venv-metaworld/bin/python bench/metaworld_expert_check.py                  # MT10 x seeds 0..9
    .venv-metaworld/bin/python bench/metaworld_expert_check.py --benchmark mt50 --seeds 5

Episodes go through ``MetaWorld().make(...)`` (so the same seed -> goal scheme and reset code as the
served env) and ``MetaWorldExpert().predict`` (the served model's code). The random policy draws
uniform actions in [-1, 1] from a generator seeded by the episode seed. Prints per-task success
rates, mean episode length and seconds per episode; exits 1 if the expert falls below
``--min-expert`` on any task.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")
os.environ.setdefault("MUJOCO_GL", "egl")

from evaluations.prebuilt.metaworld import BENCHMARKS, MetaWorld, MetaWorldExpert  # noqa: E402


def run_episode(env, policy, seed: int) -> dict:
    obs, info = env.reset(seed=seed)
    t0 = time.perf_counter()
    steps, ret, success = 0, 0.0, False
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        steps += 1
        ret += reward
        success = success or bool(info["success"])
        if terminated or truncated:
            break
    return {"seed": seed, "goal": info.get("goal_index"), "steps": steps, "return": ret, "success": success,
            "seconds": time.perf_counter() - t0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", default="mt10", choices=tuple(BENCHMARKS))
    ap.add_argument("--tasks", nargs="*", help="subset of the benchmark's tasks")
    ap.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 per task")
    ap.add_argument("--physics", type=float, default=0.0)
    ap.add_argument("--no-random", action="store_true", help="skip the random-policy baseline")
    ap.add_argument("--min-expert", type=float, default=0.9)
    ap.add_argument("--json", help="also write per-episode rows to this file")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message="Constant\\(s\\) may be too high")

    tasks = args.tasks or list(BENCHMARKS[args.benchmark])
    seeds = list(range(args.seeds))
    expert = MetaWorldExpert()
    factory = MetaWorld()
    rows: list[dict] = []
    header = f"{'task':<26} {'expert':>7} {'steps':>6} {'s/ep':>6}"
    if not args.no_random:
        header += f" {'random':>7} {'s/ep':>6}"
    header += f" {'make s':>6}"
    print(f"Meta-World {args.benchmark}, seeds {seeds[0]}..{seeds[-1]}, physics={args.physics:g}")
    print(header)
    print("-" * len(header))
    t_all = time.perf_counter()
    failing = []
    for task in tasks:
        t0 = time.perf_counter()
        env = factory.make(benchmark=args.benchmark, task=task, physics=args.physics)
        make_s = time.perf_counter() - t0
        try:
            ex = [run_episode(env, expert.predict, s) for s in seeds]
            for r in ex:
                rows.append({"task": task, "policy": "expert", **r})
            line = (f"{task:<26} {np.mean([r['success'] for r in ex]):>7.0%} "
                    f"{np.mean([r['steps'] for r in ex]):>6.0f} {np.mean([r['seconds'] for r in ex]):>6.3f}")
            if not args.no_random:
                rd = []
                for s in seeds:
                    rng = np.random.default_rng(s)
                    rd.append(run_episode(env, lambda _obs, rng=rng: rng.uniform(-1.0, 1.0, 4).astype(np.float32), s))
                for r in rd:
                    rows.append({"task": task, "policy": "random", **r})
                line += f" {np.mean([r['success'] for r in rd]):>7.0%} {np.mean([r['seconds'] for r in rd]):>6.3f}"
        finally:
            env.close()
        print(line + f" {make_s:>6.2f}", flush=True)
        rate = np.mean([r["success"] for r in ex])
        if rate < args.min_expert:
            failing.append((task, rate, [r["seed"] for r in ex if not r["success"]]))

    exp = [r for r in rows if r["policy"] == "expert"]
    rnd = [r for r in rows if r["policy"] == "random"]
    print("-" * len(header))
    summary = f"{'mean':<26} {np.mean([r['success'] for r in exp]):>7.1%} {np.mean([r['steps'] for r in exp]):>6.0f} "
    summary += f"{np.mean([r['seconds'] for r in exp]):>6.3f}"
    if rnd:
        summary += f" {np.mean([r['success'] for r in rnd]):>7.1%} {np.mean([r['seconds'] for r in rnd]):>6.3f}"
    print(summary)
    print(f"{len(rows)} episodes in {time.perf_counter() - t_all:.1f} s")
    if args.json:
        Path(args.json).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    for task, rate, seeds_failed in failing:
        print(f"BELOW {args.min_expert:.0%}: {task} expert {rate:.0%} (failed seeds {seeds_failed})")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
