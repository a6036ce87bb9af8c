"""Success table of ``prebuilt/libero-expert`` on LIBERO, in-process (run with ``.venv-libero/bin/python``).

Reproduces the ``prebuilt/libero`` env's episode procedure (LeRobot's LIBERO evaluation): for init state
``i`` of a task, ``reset()``; ``set_init_state(init_states[i % 50])``; ``SETTLE_STEPS`` steps of LeRobot's dummy
action (not counted); then at most the suite's step cap of expert actions, stopping at the first step where
``env.check_success()`` holds. The expert sees ``{"privileged": privileged_observation(env, raw_obs)}``,
exactly the key the env serves. No rendering (the expert reads no images).

    MUJOCO_GL=egl HOME=/tmp/libero-home .venv-libero/bin/python bench/bench_libero_expert.py \\
        --suites libero_object libero_spatial --init-states 0-9 [--tasks 0,4,5] [--out results.jsonl]

Prints one line per episode (to stderr), then a per-task and per-suite table of successes, mean steps of the
successful episodes, and episodes per minute. ``--out`` appends one JSON line per episode as it finishes, and
``--resume`` skips episodes already in that file; ``--table-from FILE`` only prints the table of a results file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: LeRobot's ``TASK_SUITE_MAX_STEPS`` (lerobot/envs/libero.py), the policy's step cap per suite.
MAX_STEPS = {"libero_spatial": 280, "libero_object": 280, "libero_goal": 300, "libero_10": 520, "libero_90": 400}
#: LeRobot's ``num_steps_wait`` and ``get_libero_dummy_action()``.
SETTLE_STEPS = 10
DUMMY_ACTION = [0, 0, 0, 0, 0, 0, -1]


def _indices(spec: str, limit: int) -> list[int]:
    if spec == "all":
        return list(range(limit))
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return [i for i in out if i < limit]


def make_env(suite_name: str, task_index: int):
    """LIBERO's ``OffScreenRenderEnv`` for one task, without cameras; returns ``(env, task, init_states)``."""
    from libero.libero import benchmark, get_libero_path
    from libero.libero.envs import OffScreenRenderEnv

    suite = benchmark.get_benchmark_dict()[suite_name]()
    task = suite.get_task(task_index)
    bddl = os.path.join(get_libero_path("bddl_files"), task.problem_folder, task.bddl_file)
    env = OffScreenRenderEnv(bddl_file_name=bddl, camera_heights=128, camera_widths=128, use_camera_obs=False)
    return env, task, suite.get_task_init_states(task_index)


def run_episode(env, init_states, init_index: int, max_steps: int, policy) -> tuple[bool, int]:
    """One episode by the env's procedure; returns ``(success, policy steps taken)``."""
    from evaluations.prebuilt.libero_privileged import privileged_observation

    env.reset()
    raw = env.set_init_state(init_states[init_index % len(init_states)])
    for _ in range(SETTLE_STEPS):
        raw, _, _, _ = env.step(DUMMY_ACTION)
    for step in range(1, max_steps + 1):
        action = policy({"privileged": privileged_observation(env, raw)})
        raw, _, _, _ = env.step(action)
        if env.check_success():
            return True, step
    return False, max_steps


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


def _done(path: Path | None) -> set[tuple[str, int, int]]:
    if path is None or not path.exists():
        return set()
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(r["suite"], r["task"], r["init_state"]) for r in rows}


def _task_episodes(suite: str, task_index: int, todo: list[int], policy, out: Path | None) -> list[dict]:
    env, task, states = make_env(suite, task_index)
    rows = []
    for i in todo:
        t0 = time.monotonic()
        success, steps = run_episode(env, states, i, MAX_STEPS[suite], policy)
        row = {"suite": suite, "task": task_index, "init_state": i, "success": success, "steps": steps,
               "seconds": round(time.monotonic() - t0, 2), "instruction": task.language}
        rows.append(row)
        print(f"{suite}/{task_index} init {i}: {'ok  ' if success else 'FAIL'} {steps} steps {row['seconds']} s",
              file=sys.stderr, flush=True)
        if out is not None:
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    env.close()
    return rows


def sweep(
    suites: list[str], tasks: str, init_states: str, out: Path | None, resume: bool, chunk: int = 50
) -> list[dict]:
    """Run the episodes; returns their rows (``suite``, ``task``, ``init_state``, ``success``, ``steps``).

    Init states go in chunks of ``chunk`` over every task before the next chunk, so a sweep stopped early
    still covers every task.
    """
    from evaluations.prebuilt.libero_expert import LiberoExpert

    model = LiberoExpert()
    skip = _done(out) if resume else set()
    rows: list[dict] = []
    started = time.monotonic()
    wanted = _indices(init_states, 50)
    chunks = [wanted[k : k + chunk] for k in range(0, len(wanted), chunk)]
    for part, suite, task_index in [
        (c, s, t) for c in chunks for s in suites for t in _indices(tasks, 90 if s == "libero_90" else 10)
    ]:
        todo = [i for i in part if (suite, task_index, i) not in skip]
        if todo:
            rows += _task_episodes(suite, task_index, todo, model.predict, out)
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
    parser.add_argument("--chunk", type=int, default=50, help="init states per task before the next task")
    parser.add_argument("--table-from", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args(argv)
    if args.table_from:
        rows = [json.loads(line) for line in args.table_from.read_text().splitlines() if line.strip()]
    else:
        rows = sweep(args.suites, args.tasks, args.init_states, args.out, args.resume, args.chunk)
    print(_table(rows))


if __name__ == "__main__":
    main()
