"""Part 5 of ``bench/bench_libero.py`` (issue 26): runs the measurements of ``bench/libero_before_after.py`` and
prints the BEFORE / AFTER table; the raw results (every sweep episode) go to ``bench/results/libero-26-<time>.json``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import bench.libero_before_after as ba

RESULTS = Path(__file__).resolve().parent / "results"


def _tasks(sweep: str) -> tuple[list[str], int]:
    n_tasks, n_states = (20, 50) if sweep == "full" else map(int, sweep.split("x"))
    every = [f"{suite}/{i}" for i in range(10) for suite in ("libero_object", "libero_spatial")]
    return every[:n_tasks], n_states


def before_after(episodes: int, sweep: str, workers: int) -> None:
    out: dict = {"sweep": sweep, "workers_after": workers, "expert_episodes": episodes}
    stamp = time.strftime("%Y%m%dT%H%M%S")
    path = RESULTS / f"libero-26-{stamp}.json"

    def save():
        RESULTS.mkdir(exist_ok=True)
        path.write_text(json.dumps(out, indent=1))

    print("resets ...", flush=True)
    out["reset_s"] = {"before": ba.resets(ba.BEFORE, 5), "after": ba.resets(ba.AFTER, 20)}
    print("env servers ...", flush=True)
    out["servers"] = {"before": ba.servers(ba.BEFORE), "after": ba.servers(ba.AFTER)}
    save()
    print("expert through the platform ...", flush=True)
    rate = out["expert"] = {}
    rate["before"] = ba.platform(ba.BEFORE, ["libero_object/0"], episodes, 1)
    rate["before_n"] = ba.platform(ba.BEFORE, ["libero_object/0"], episodes, workers)
    rate["after_1"] = ba.platform(ba.AFTER, ["libero_object/0"], episodes, 1)
    rate["after"] = ba.platform(ba.AFTER, ["libero_object/0"], episodes, workers)
    save()
    tasks, states = _tasks(sweep)
    print(f"sweep {len(tasks)} tasks x {states} ...", flush=True)
    out["sweep_after"] = ba.platform(ba.AFTER, tasks, states, workers)
    save()
    _print(out, tasks, states)
    print(f"raw results: {path}")


def sweep_only(episodes: int, sweep: str, workers: int, minutes: float = 120) -> None:
    """The sweep alone, AFTER (e.g. ``--sweep full`` once the table's other rows are measured); cancelled after
    ``minutes``, with the episodes recorded by then as its (labelled) result."""
    tasks, states = _tasks(sweep)
    w = ba.platform(ba.AFTER, tasks, states, workers, timeout=minutes * 60)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"libero-26-sweep-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps({"sweep": sweep, "workers": workers, "sweep_after": w}, indent=1))
    print(f"sweep {len(tasks)} tasks x {states} ({w['episodes']} episodes, {workers} workers, {w['status']}): "
          f"{w['platform_wall_s'] / 60:.1f} min, {w['per_min']:.1f} episodes/min")
    for task, (ok, total) in sorted(w["per_task"].items()):
        print(f"  {task}: {ok}/{total}")
    print(f"raw results: {path}")


def _print(out: dict, tasks: list[str], states: int) -> None:
    gb = 2**30
    s, r, e, w = out["servers"], out["reset_s"], out["expert"], out["sweep_after"]
    b_first, b_two = s["before"]["pss"]
    a_first, a_two = s["after"]["pss"]
    n = len(tasks) * states
    full = 1000
    before_full = full / e["before"]["per_min"] * 60
    after_rate = w["per_min"]
    rows = [
        ("reset (median)", f"{r['before']:.2f} s", f"{r['after']:.2f} s"),
        ("env start, first of a task", f"{s['before']['start_s'][0]:.1f} s", f"{s['after']['start_s'][0]:.1f} s"),
        ("env start, task already on the host", f"{s['before']['start_s'][1]:.1f} s",
         f"{s['after']['start_s'][1]:.2f} s"),
        ("memory, first env (PSS)", f"{b_first / gb:.2f} GB", f"{a_first / gb:.2f} GB"),
        ("memory, each additional env (PSS)", f"{(b_two - b_first) / gb:.2f} GB", f"{(a_two - a_first) / gb:.2f} GB"),
        ("expert episodes/min, libero_object/0, 1 worker", f"{e['before']['per_min']:.1f}",
         f"{e['after_1']['per_min']:.1f}"),
        (f"expert episodes/min, libero_object/0, {out['workers_after']} workers", f"{e['before_n']['per_min']:.1f}",
         f"{e['after']['per_min']:.1f}"),
        (f"sweep {len(tasks)} tasks x {states} ({n} episodes)", "",
         f"{w['platform_wall_s'] / 60:.1f} min ({after_rate:.1f}/min)"),
        ("full sweep, 1,000 episodes", f"{before_full / 60:.0f} min (extrapolated from the BEFORE rate)",
         f"{w['platform_wall_s'] / 60:.1f} min" if n == full else f"{full / after_rate:.0f} min (extrapolated from this slice)"),
    ]
    width = max(len(a) for a, _, _ in rows)
    print(f"{'':{width}}  {'BEFORE':>24}  {'AFTER':>24}")
    for name, before, after in rows:
        print(f"{name:{width}}  {before:>24}  {after:>24}")
    n_w = out["workers_after"]
    print(f"expert episodes/min, AFTER / BEFORE: {e['after_1']['per_min'] / e['before']['per_min']:.2f}x with 1 worker each, "
          f"{e['after']['per_min'] / e['before_n']['per_min']:.2f}x with {n_w} each, "
          f"{e['after']['per_min'] / e['before']['per_min']:.2f}x AFTER with {n_w} against BEFORE with 1")
    print("per-task expert successes (sweep, AFTER):")
    for task, (ok, total) in sorted(w["per_task"].items()):
        print(f"  {task}: {ok}/{total}")
