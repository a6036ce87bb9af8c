"""Success table of ``prebuilt/libero-expert`` on LIBERO, in-process (run with ``.venv-libero/bin/python``).

Runs each episode through the platform's own env class, built as the ``prebuilt/libero`` image builds it
(``Libero().make(suite, task_index, cameras="none", privileged=True)``, a
:class:`~evaluations.prebuilt.libero.env.LiberoTaskEnv`), and resets it as the platform does: ``reset(seed=s)``,
which seeds LIBERO (``env.seed(s)``: NumPy's global RNG, from which the reset samples the fixtures' placement),
resets, sets init state ``s mod 50`` and steps the ``SETTLE_STEPS`` no-op actions. The policy then acts until the
episode terminates (the BDDL goal) or is truncated at the suite's step cap. The expert sees the observation the
env serves. No rendering (the expert reads no images). So a row here is the episode a user gets for that seed.

    MUJOCO_GL=egl HOME=/tmp/libero-home .venv-libero/bin/python bench/bench_libero_expert.py \\
        --suites libero_object libero_spatial --init-states 0-9 [--tasks 0,4,5] [--seed-offset 50] \\
        [--out results.jsonl] [--reset soft|hard|both]

``--reset`` picks how the env resets (the ``hard_reset`` make parameter): ``soft`` (the default, the compiled scene
restored), ``hard`` (robosuite rebuilds the scene every episode), or ``both``: per task, a hard-reset env runs the
seeds in order, then a soft-reset env runs them in the same order and again in reverse order; then the digests of
each seed across the three runs are compared (a line per seed that differs, and a count), and per mode the reset
time (median, max), the episode wall time (reset + steps, median) and the expert episodes per minute are printed.

Init state ``i`` runs with seed ``i + --seed-offset`` (default 0; seed ``i + 50`` starts from the same init state
with another fixture placement). Prints one line per episode (to stderr), then a per-task and per-suite table of
successes, mean steps of the successful episodes, and episodes per minute. Each row carries the episode's
trajectory digest (:mod:`evaluations.domain.trajectory`), the one the platform records for that episode. ``--out``
appends one JSON line per episode as it finishes, and ``--resume`` skips episodes already in that file;
``--table-from FILE`` only prints the table of a results file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluations.domain.trajectory import TrajectoryDigest  # noqa: E402
from evaluations.prebuilt.libero import NUM_INIT_STATES  # noqa: E402


def _indices(spec: str, limit: int) -> list[int]:
    if spec == "all":
        return list(range(limit))
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return [i for i in out if i < limit]


def make_env(suite_name: str, task_index: int, hard_reset: bool = False):
    """The platform's env for one task, without cameras, with the privileged state the expert reads."""
    from evaluations.prebuilt.libero import Libero

    return Libero().make(suite=suite_name, task_index=task_index, cameras="none", privileged=True,
                         hard_reset=hard_reset)


def run_episode(env, seed: int, policy) -> dict:
    """One episode as the platform runs it; returns ``success``, ``steps`` (the policy's), ``init_state``, the
    trajectory ``digest`` (the action cast to the action space's float32, as rlmesh delivers it to the env) and
    ``reset_seconds`` (the reset, settle steps included).
    Measured: the platform recorded the same digest for the same seed (libero_spatial/9, seed 10, 135 steps)."""
    import numpy as np

    digest = TrajectoryDigest()
    t0 = time.monotonic()
    obs, info = env.reset(seed=seed)
    reset_seconds = time.monotonic() - t0
    terminated = truncated = False
    steps = 0
    while not (terminated or truncated):
        action = np.asarray(policy(obs), dtype=env.action_space.dtype)
        next_obs, reward, terminated, truncated, info = env.step(action)
        digest.step(obs, action, reward, terminated, truncated)
        obs = next_obs
        steps += 1
    return {"success": bool(info["success"]), "steps": steps, "init_state": info["init_state"],
            "digest": digest.hexdigest(), "reset_seconds": round(reset_seconds, 3)}


def _table(rows: list[dict]) -> str:
    by_task: dict[tuple[str, int], list[dict]] = {}
    for row in rows:
        by_task.setdefault((row["suite"], row["task"]), []).append(row)
    lines = ["| suite | task | success | mean steps (successes) | instruction |", "|---|---|---|---|---|"]
    suites: dict[str, list[int]] = {}
    for (suite, task), eps in sorted(by_task.items()):
        wins = [e for e in eps if e["success"]]
        mean = f"{sum(e['steps'] for e in wins) / len(wins):.0f}" if wins else "–"
        rate = f"{len(wins)}/{len(eps)} ({100 * len(wins) / len(eps):.0f} %)"
        lines.append(f"| {suite} | {task} | {rate} | {mean} | {eps[0].get('instruction', '')} |")
        total = suites.setdefault(suite, [0, 0])
        total[0] += len(wins)
        total[1] += len(eps)
    lines += ["", "| suite | success |", "|---|---|"]
    lines += [f"| {s} | {w}/{n} ({100 * w / n:.1f} %) |" for s, (w, n) in sorted(suites.items())]
    return "\n".join(lines)


def _done(path: Path | None) -> set[tuple]:
    if path is None or not path.exists():
        return set()
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {_key(r) for r in rows}


def _key(row: dict) -> tuple:
    return (row["suite"], row["task"], row.get("seed", row["init_state"]), row.get("reset", "soft"),
            row.get("order", "forward"))


#: ``--reset`` → the runs of each task: (reset mode, order of the seeds); the runs of one mode share one env.
RUNS = {"soft": [("soft", "forward")], "hard": [("hard", "forward")],
        "both": [("hard", "forward"), ("soft", "forward"), ("soft", "reverse")]}


def _task_episodes(suite: str, task_index: int, seeds: list[int], policy, out: Path | None, reset: str = "soft",
                   skip: frozenset = frozenset()) -> list[dict]:
    rows = []
    envs: dict[str, object] = {}
    for mode, order in RUNS[reset]:
        todo = [s for s in (seeds if order == "forward" else seeds[::-1])
                if (suite, task_index, s, mode, order) not in skip]
        if todo and mode not in envs:
            t0 = time.monotonic()
            envs[mode] = make_env(suite, task_index, hard_reset=mode == "hard")
            print(f"{suite}/{task_index} {mode} env built in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        for seed in todo:
            env = envs[mode]
            t0 = time.monotonic()
            episode = run_episode(env, seed, policy)
            row = {"suite": suite, "task": task_index, "seed": seed, **episode, "reset": mode, "order": order,
                   "seconds": round(time.monotonic() - t0, 2), "instruction": env.instruction}
            rows.append(row)
            print(f"{suite}/{task_index} seed {seed} (init {row['init_state']}) {mode}/{order}: "
                  f"{'ok  ' if row['success'] else 'FAIL'} {row['steps']} steps, reset {row['reset_seconds']} s, "
                  f"{row['seconds']} s {row['digest'][:12]}", file=sys.stderr, flush=True)
            if out is not None:
                with out.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
    for env in envs.values():
        env.close()
    return rows


def _median(values: list[float]) -> float:
    import statistics

    return statistics.median(values) if values else float("nan")


def reset_report(rows: list[dict]) -> str:
    """Per reset mode: episodes, reset time (median, max), episode wall time (median), expert episodes per minute
    (episodes over the sum of their wall times: env builds excluded); then the digest check across modes and orders:
    for each (suite, task, seed) run more than once, whether every run gave the same digest."""
    lines = ["| reset | episodes | reset median | reset max | episode median | episodes/min |",
             "|---|---|---|---|---|---|"]
    for mode in sorted({r.get("reset", "soft") for r in rows}):
        eps = [r for r in rows if r.get("reset", "soft") == mode and "reset_seconds" in r]
        if not eps:
            continue
        resets = [r["reset_seconds"] for r in eps]
        walls = [r["seconds"] for r in eps]
        lines.append(f"| {mode} | {len(eps)} | {_median(resets):.2f} s | {max(resets):.2f} s | "
                     f"{_median(walls):.2f} s | {60 * len(eps) / sum(walls):.1f} |")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["suite"], r["task"], r["seed"]), []).append(r)
    repeated = {k: v for k, v in groups.items() if len(v) > 1}
    differ = {k: v for k, v in repeated.items() if len({r["digest"] for r in v}) > 1}
    lines.append("")
    lines.append(f"digests: {len(repeated) - len(differ)}/{len(repeated)} seeds identical across "
                 f"{sorted({(r.get('reset', 'soft'), r.get('order', 'forward')) for r in rows})}")
    for (suite, task, seed), runs in sorted(differ.items()):
        lines.append(f"  DIFFER {suite}/{task} seed {seed}: " + ", ".join(
            f"{r.get('reset', 'soft')}/{r.get('order', 'forward')} {r['digest'][:12]} ({r['steps']} steps)"
            for r in runs))
    return "\n".join(lines)


def sweep(
    suites: list[str], tasks: str, init_states: str, out: Path | None, resume: bool, chunk: int = 50,
    seed_offset: int = 0, reset: str = "soft",
) -> list[dict]:
    """Run the episodes; returns their rows (``suite``, ``task``, ``seed``, ``init_state``, ``success``, ``steps``,
    ``digest``). Init state ``i`` runs with seed ``i + seed_offset``.

    Init states go in chunks of ``chunk`` over every task before the next chunk, so a sweep stopped early
    still covers every task.
    """
    from evaluations.prebuilt.libero.expert.model import LiberoExpert

    model = LiberoExpert()
    skip = _done(out) if resume else set()
    rows: list[dict] = []
    started = time.monotonic()
    wanted = [i + seed_offset for i in _indices(init_states, NUM_INIT_STATES)]
    chunks = [wanted[k : k + chunk] for k in range(0, len(wanted), chunk)]
    for part, suite, task_index in [
        (c, s, t) for c in chunks for s in suites for t in _indices(tasks, 90 if s == "libero_90" else 10)
    ]:
        rows += _task_episodes(suite, task_index, part, model.predict, out, reset, frozenset(skip))
    minutes = (time.monotonic() - started) / 60
    if rows:
        print(f"{len(rows)} episodes in {minutes:.1f} min: {len(rows) / minutes:.1f} episodes/min", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", nargs="+", default=["libero_object", "libero_spatial"])
    parser.add_argument("--tasks", default="all", help="task indices: all, or e.g. 0-3,5")
    parser.add_argument("--init-states", default="0-9", help="init state indices: all, or e.g. 0-9")
    parser.add_argument("--out", type=Path, help="append one JSON line per episode to this file")
    parser.add_argument("--resume", action="store_true", help="skip the episodes already in --out")
    parser.add_argument("--seed-offset", type=int, default=0,
                        help="init state i runs with seed i + this (a multiple of 50: same init states)")
    parser.add_argument("--chunk", type=int, default=50, help="init states per task before the next task")
    parser.add_argument("--reset", choices=sorted(RUNS), default="soft",
                        help="soft (the compiled scene restored), hard (rebuilt every episode), or both (compared)")
    parser.add_argument("--table-from", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args(argv)
    if args.table_from:
        rows = [json.loads(line) for line in args.table_from.read_text().splitlines() if line.strip()]
    else:
        rows = sweep(args.suites, args.tasks, args.init_states, args.out, args.resume, args.chunk,
                     args.seed_offset, args.reset)
    print(_table([r for r in rows if (r.get("reset"), r.get("order")) in ((None, None), RUNS[args.reset][-1])]))
    print()
    print(reset_report(rows))


if __name__ == "__main__":
    main()
