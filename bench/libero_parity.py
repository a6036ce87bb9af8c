"""``prebuilt/libero`` against LeRobot 0.4.4's own LIBERO env, step by step (issue #27), in the LIBERO venv with
lerobot appended to the path (:mod:`tests.support.libero_parity` says why and how)::

    MUJOCO_GL=egl HOME=/tmp/libero-home PYTHONPATH=$PWD .venv-libero/bin/python bench/libero_parity.py \\
        --suites libero_object --init-states 0-2 --random-steps 30 --out parity.jsonl
    .venv-libero/bin/python bench/libero_parity.py --table parity.jsonl   # the per-suite table of several runs

Per suite one task (:data:`TASKS`), per init state ``k`` (seed ``1000 + k``: lerobot-eval's default start seed, whose
sub-env ``k`` starts from init state ``k``): an episode of the scripted expert (``prebuilt/libero-expert``, reading
our env's privileged state; the same action goes to both envs) until success or the suite's cap, and one of seeded
uniform random actions (``--random-steps``; ``0``: to the cap); ``--expert-steps`` limits the expert's. Each
episode is one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: The task of each suite: pick-and-place tasks the expert solves (its success and termination are compared).
TASKS = {"libero_spatial": 0, "libero_object": 0, "libero_goal": 8, "libero_10": 0, "libero_90": 46}
START_SEED = 1000


def _range(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def run(args) -> None:
    from evaluations.prebuilt.libero import private_config_dir

    private_config_dir()
    from evaluations.prebuilt.libero.expert.model import LiberoExpert
    from tests.support.libero_parity import (
        LeRobotLibero, compare_episode, import_lerobot, make_ours, random_actions)

    import_lerobot()
    out = open(args.out, "a", encoding="utf-8") if args.out else sys.stdout
    for suite in args.suites:
        task = TASKS[suite] if args.task is None else args.task
        ours = make_ours(suite, task)
        theirs = LeRobotLibero(suite, task, one_build_of_samplers=args.one_build_of_samplers)
        for k in _range(args.init_states):
            seed = START_SEED + k
            kinds = [("expert", LiberoExpert().predict, args.expert_steps or None)] if args.expert else []
            kinds.append(("random", random_actions(seed), args.random_steps or None))
            for kind, policy, limit in kinds:
                t0 = time.monotonic()
                result = compare_episode(ours, theirs, seed=seed, policy=policy, max_steps=limit)
                result.update(suite=suite, task=task, seed=seed, actions=kind, seconds=round(time.monotonic() - t0, 1),
                              lerobot_samplers="one build" if args.one_build_of_samplers else "as built")
                out.write(json.dumps(result) + "\n")
                out.flush()
        ours.close()
        theirs.close()


def table(paths: list[str]) -> str:
    """Markdown table per suite: episodes, steps compared, steps with each kind of difference."""
    rows: dict[str, dict] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            one_build = r["lerobot_samplers"] == "one build"
            name = f"{r['suite']} ({r['task']})" + (", LeRobot one build" if one_build else "")
            row = rows.setdefault(name, {"episodes": 0, "steps": 0, "diffs": {}, "ulps": 0, "ends": set(),
                                         "max_abs": 0.0})
            row["episodes"] += 1
            row["steps"] += r["steps"] + 1  # the observation after the reset too
            row["ulps"] = max(row["ulps"], r["axis_angle_max_ulps"])
            row["max_abs"] = max(row["max_abs"], r["state_max_abs"])
            end = "success" if r["success"][1] else ("cap" if r["end"]["lerobot"][1] else "limit")
            row["ends"].add(f"{r['actions']} {end}")
            for field, n in r["diffs"].items():
                row["diffs"][field] = row["diffs"].get(field, 0) + n
    lines = ["| suite (task) | episodes | steps compared | differing steps | axis-angle last bits | ends |",
             "|---|---|---|---|---|---|"]
    for suite, row in rows.items():
        real = {f: n for f, n in row["diffs"].items() if n and f != "axis_angle_bits"}
        lines.append(f"| {suite} | {row['episodes']} | {row['steps']} | "
                     f"{', '.join(f'{f} {n}' for f, n in real.items()) or '0'} | "
                     f"{row['diffs'].get('axis_angle_bits', 0)} steps, ≤ {row['ulps']} ulp, "
                     f"≤ {row['max_abs']:.1e} rad | "
                     f"{', '.join(sorted(row['ends']))} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--init-states", default="0-2")
    parser.add_argument("--random-steps", type=int, default=30, help="0: to the suite's cap")
    parser.add_argument("--task", type=int, help="this task index in every suite instead of TASKS")
    parser.add_argument("--expert-steps", type=int, default=0, help="0: until success or the suite's cap")
    parser.add_argument("--no-expert", dest="expert", action="store_false")
    parser.add_argument("--one-build-of-samplers", action="store_true",
                        help="LeRobot's env with one property sampler per predicate, as ours (the equivalent setting)")
    parser.add_argument("--out", help="append JSON lines here (default: stdout)")
    parser.add_argument("--table", nargs="+", help="print the table of these JSON-lines files and exit")
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return
    run(args)


if __name__ == "__main__":
    main()
