"""The full LIBERO protocol through the platform, in one request, with a worker killed in the middle (issue 36 part 4).
A benchmark, not a timed test::

    .venv/bin/python bench/bench_libero_protocol.py [--suites libero_spatial libero_object libero_goal libero_10]
        [--episodes 50] [--hosts 2] [--kill-at 0.5] [--out bench/results/libero_protocol_<date>.json]

One evaluation of ``prebuilt/libero-expert``: every task of each suite × ``--episodes`` episodes (seed 0: episode i
runs init state i), ``record: none``, on a live platform (gunicorn + Celery; SQLite and the database broker, as ``make
demo`` runs) with ``--hosts`` workers of one process each, named as separate hosts. While it runs, the progress the
dashboard shows (``GET /v1/evaluations/{id}``: completed of total) is printed each minute. Celery beat runs the
reaper every 30 s, as deployed. When ``--kill-at`` of the
episodes are done, the worker running a server is killed with SIGKILL (main process and pool) and started again; the
reaper puts its shards back and they resume.

Checked at the end: every (task, episode index) recorded exactly once, none lost; each episode's seed is its index;
per-task successes; and each episode's trajectory digest against the bare loop's digest of the same task and init
state: ``bench_libero_expert.py`` run after the platform, at the same commit, on ``--bare-init-states`` of every task
(or ``--bare``: such a file). Prints the wall time, episodes
per minute, the kill and its recovery, and writes everything to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.hostinfo import host  # noqa: E402

SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")


def submit(live, suites: list[str], episodes: int) -> str:
    tasks = [{"env": "prebuilt/libero", "taskId": f"{suite}/{i}", "episodes": episodes, "seed": 0, "record": "none"}
             for suite in suites for i in range(10)]
    body = {"name": f"LIBERO protocol: expert, {len(tasks)} tasks x {episodes}", "models": ["prebuilt/libero-expert"],
            "tasks": tasks}
    r = live.cli("eval", "submit", "-", "--json", stdin=json.dumps(body))
    return json.JSONDecoder().raw_decode(r.stdout)[0]["id"]


def watch(live, eval_id: str, kill_at: float, log: list[dict]) -> dict:
    """Poll until the evaluation ends; kill and restart the server-running worker once ``kill_at`` is done."""
    started, killed, last_print = time.monotonic(), None, 0.0
    while True:
        e = live.api(f"/v1/evaluations/{eval_id}")
        done, total = e["progress"]["completedEpisodes"], e["progress"]["totalEpisodes"]
        now = time.monotonic() - started
        if now - last_print >= 60:
            print(f"  {now / 60:5.1f} min: {done}/{total} episodes ({e['status']})", flush=True)
            log.append({"minutes": round(now / 60, 2), "completed": done, "total": total, "status": e["status"]})
            last_print = now
        if e["status"] in ("completed", "failed", "cancelled"):
            return {"status": e["status"], "wall_s": now, "killed": killed}
        if killed is None and done >= kill_at * total:
            name = live.worker_of_servers()
            hostname = live.hostnames[name]
            live.kill_worker(name)
            killed = {"at_s": round(now, 1), "completed": done, "worker": name, "host": hostname}
            print(f"  killed {name} ({hostname}) at {done}/{total}; starting it again", flush=True)
            proc = live.start_worker(hostname=hostname, concurrency=1)
            live.hostnames[next(k for k, p in live.procs.items() if p is proc and k != "worker")] = hostname
        time.sleep(5)


def check(items: list[dict], suites: list[str], episodes: int, bare: dict) -> dict:
    """Exactly once, seeds, successes per task, digests against the bare sweep."""
    keys = Counter((i["taskId"], i["index"]) for i in items)
    expected = {(f"{s}/{t}", n) for s in suites for t in range(10) for n in range(episodes)}
    per_task: dict[str, list[int]] = {}
    same = differ = 0
    for item in items:
        row = per_task.setdefault(item["taskId"], [0, 0])
        row[0] += bool(item.get("success"))
        row[1] += 1
        ref = bare.get((item["taskId"], item["seed"]))
        if ref is not None and item.get("trajectoryDigest"):
            same += ref == item["trajectoryDigest"]
            differ += ref != item["trajectoryDigest"]
    return {"episodes": len(items), "repeated": sorted(k for k, n in keys.items() if n > 1)[:10],
            "lost": sorted(expected - set(keys))[:10], "lostCount": len(expected - set(keys)),
            "seedIsIndex": all(i["seed"] == i["index"] for i in items),
            "statuses": dict(Counter(i["status"] for i in items)), "perTask": per_task,
            "successes": sum(r[0] for r in per_task.values()),
            "digestsVsBare": {"same": same, "differ": differ}}


def bare_digests(path: Path | None) -> dict:
    """``{(taskId, init state): digest}`` of a ``bench_libero_expert.py --out`` file (seed = init state)."""
    if not path or not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("digest"):
            out[(f"{row['suite']}/{row['task']}", row["init_state"])] = row["digest"]
    return out


def main(argv: list[str] | None = None) -> None:
    from tests.support.live import LivePlatform

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suites", nargs="+", default=list(SUITES))
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--kill-at", type=float, default=0.5)
    p.add_argument("--bare", type=Path, help="a bench_libero_expert.py --out file of this commit to compare digests "
                   "with (default: one is made after the run, of --bare-init-states of every task)")
    p.add_argument("--bare-init-states", default="0-1")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    live = LivePlatform(Path(tempfile.mkdtemp(prefix="rlm-protocol-")), RLMESH_SHARD_HEARTBEAT_TIMEOUT="600").prepare()
    live.hostnames = {}
    live.start_web()
    live.start_beat()  # the deployment's periodic reaper (make demo's worker runs it embedded: -B)
    for h in range(args.hosts):
        proc = live.start_worker(hostname=f"host{h + 1}", concurrency=1)
        live.hostnames[next(k for k, p_ in live.procs.items() if p_ is proc and k != "worker")] = f"host{h + 1}"
    progress: list[dict] = []
    try:
        eval_id = submit(live, args.suites, args.episodes)
        print(f"submitted {eval_id}: {len(args.suites) * 10} tasks x {args.episodes} episodes on {args.hosts} hosts",
              flush=True)
        run = watch(live, eval_id, args.kill_at, progress)
        items = live.episodes(eval_id)
        metrics = live.api(f"/v1/evaluations/{eval_id}/metrics")
    finally:
        live.stop()
    bare = args.bare
    if bare is None:  # the bare loop at this commit, on a sample of the same episodes
        bare = Path(tempfile.mkdtemp(prefix="rlm-bare-")) / "bare.jsonl"
        subprocess.run([str(ROOT / ".venv-libero/bin/python"), str(ROOT / "bench/bench_libero_expert.py"), "--suites",
                        *args.suites, "--init-states", args.bare_init_states, "--out", str(bare)], cwd=ROOT, check=True,
                       capture_output=True)
    result = {"evaluation": eval_id, **run, "progress": progress, "metrics": {
        k: metrics.get(k) for k in ("wallSeconds", "stepsPerSecond", "episodesPerSecond") if k in metrics},
        **check(items, args.suites, args.episodes, bare_digests(bare)),
        "host": host(str(ROOT / ".venv-libero/bin/python"))}  # an episode's outcome can follow the CPU: hostinfo.py
    wall = metrics.get("wallSeconds") or run["wall_s"]
    print(json.dumps({k: v for k, v in result.items() if k not in ("perTask", "progress")}, indent=1))
    print(f"{result['episodes']} episodes in {wall / 60:.1f} min ({result['episodes'] / wall * 60:.1f} episodes/min); "
          f"successes {result['successes']}; lost {result['lostCount']}, repeated {len(result['repeated'])}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
