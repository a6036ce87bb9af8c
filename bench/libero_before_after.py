"""Issue 26's BEFORE / AFTER table for ``bench/bench_libero.py --before-after``.

BEFORE is the code path before issue 26, still selectable: ``RLMESH_LIBERO_HARD_RESET=1`` (a rebuild per reset),
``RLMESH_LIBERO_LEAN=0`` (build memory kept, render context opened at construction, two describe builds per server
start, no zygote) and ``RLMESH_LIBERO_FORKSERVER=False`` (a fresh interpreter per env server). AFTER is the default.
All on ``libero_object/0`` without cameras and with the privileged state (what the expert gets), except the sweep.

- reset time: median of ``--resets`` resets in-process (``LiberoTaskEnv.reset``);
- env start: request to accepting connections; BEFORE a fresh ``python -m rlmesh.serve``, AFTER the first server
  of a task (the zygote builds it) and an additional one (forked from it);
- memory: the summed PSS of every LIBERO process of the run (servers, and the zygote AFTER) with one server and
  with two, each server after one expert episode: ``first`` is the total with one, ``additional`` the increase;
- expert episodes per minute per host through a live platform (gunicorn + Celery, ``record: none``), over the
  evaluation's own wall time (``/metrics`` ``wallSeconds``, as parts 3 and 4 of ``bench_libero.py``);
- the libero_object + libero_spatial expert sweep through the platform (a slice, or all 1,000 episodes with
  ``--full-sweep``), with its per-task successes; its raw episodes go to ``bench/results/``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from evaluations.runtime.processes import start_time

ROOT = Path(__file__).resolve().parents[1]
LIBERO_PYTHON = ROOT / ".venv-libero" / "bin" / "python"
BEFORE = {"RLMESH_LIBERO_HARD_RESET": "1", "RLMESH_LIBERO_LEAN": "0", "RLMESH_LIBERO_FORKSERVER": "False"}
AFTER: dict[str, str] = {}
KWARGS = {"suite": "libero_object", "task_index": 0, "cameras": "none", "privileged": True}
ARGS = ["--env", "evaluations.prebuilt.libero:Libero", "--kwargs-json", json.dumps(KWARGS)]

RESETS = """
import json, statistics, sys, time
from evaluations.prebuilt.libero import Libero
env = Libero().make(suite="libero_object", task_index=0, cameras="none", privileged=True)
times = []
for seed in range(int(sys.argv[1])):
    t0 = time.perf_counter(); env.reset(seed=seed); times.append(time.perf_counter() - t0)
print(json.dumps({"reset_s": statistics.median(times)}))
"""

EPISODE = """
import json, sys
import numpy as np, rlmesh
from evaluations.prebuilt.libero.expert.model import LiberoExpert
env, policy = rlmesh.numpy.RemoteEnv(sys.argv[1]), LiberoExpert().predict
obs, _ = env.reset(seed=int(sys.argv[2]))
steps, done = 0, False
while not done:
    obs, _, term, trunc, _ = env.step(np.asarray(policy(obs), dtype=np.float32))
    steps, done = steps + 1, term or trunc
env.close()
print(json.dumps({"steps": steps}))
"""


def _env(mode: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RLMESH_WORKFLOW_EDITION": "2026.06", "OPENBLAS_NUM_THREADS": "1",
           "RLMESH_LIBERO_ZYGOTE_IDLE_SECONDS": "60"}
    for key in ("RLMESH_LIBERO_HARD_RESET", "RLMESH_LIBERO_LEAN", "RLMESH_LIBERO_FORKSERVER"):
        env.pop(key, None)
    return {**env, **mode}


def _pss(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:"))


def _ready(address: str, timeout: float = 300) -> None:
    path = address.removeprefix("unix://")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
            import rlmesh

            rlmesh.numpy.RemoteEnv(address, connect_timeout_seconds=2).close()
            return
        except (OSError, ConnectionError, TimeoutError, RuntimeError):
            time.sleep(0.05)
    raise SystemExit(f"env server at {address} not ready")


def resets(mode: dict, n: int) -> float:
    out = subprocess.run([str(LIBERO_PYTHON), "-c", RESETS, str(n)], cwd=ROOT, env=_env(mode), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["reset_s"]


def servers(mode: dict) -> dict:
    """Start two env servers one after the other (BEFORE fresh, AFTER from a zygote), one expert episode on each;
    their start times and the summed PSS of the LIBERO processes with one and with two."""
    tmp = Path(tempfile.mkdtemp(prefix="rlm-bench-26-"))
    env = _env(mode)
    procs: list[int] = []
    zygote = None
    if mode is AFTER:
        zygote = subprocess.Popen([str(LIBERO_PYTHON), "-m", "evaluations.prebuilt.libero.zygote", str(tmp / "z.sock")],
                                  cwd=ROOT, env=env, stdout=open(tmp / "zygote.log", "w"), stderr=subprocess.STDOUT,
                                  start_new_session=True)
        while not (tmp / "z.sock").exists():
            time.sleep(0.05)
    me = [os.getpid(), start_time(os.getpid())]
    out: dict = {"start_s": [], "pss": []}
    try:
        for i in range(2):
            address = f"unix://{tmp}/env{i}.sock"
            t0 = time.monotonic()
            if zygote is None:
                p = subprocess.Popen([str(LIBERO_PYTHON), "-m", "rlmesh.serve", *ARGS, "--address", address], cwd=ROOT,
                                     env=env, stdout=open(tmp / f"env{i}.log", "w"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
                pid = p.pid
            else:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(tmp / "z.sock"))
                    f = s.makefile("rw")
                    f.write(json.dumps({"args": [*ARGS, "--address", address], "env": env, "cwd": str(ROOT),
                                        "log": str(tmp / f"env{i}.log"), "worker": me}) + "\n")
                    f.flush()
                    pid = json.loads(f.readline())["pid"]
            procs.append(pid)
            _ready(address)
            out["start_s"].append(time.monotonic() - t0)
            subprocess.run([str(LIBERO_PYTHON), "-c", EPISODE, address, str(i)], cwd=ROOT, env=env, check=True,
                           capture_output=True)
            out["pss"].append(sum(_pss(p) for p in [*procs, *([zygote.pid] if zygote else [])]))
    finally:
        for pid in procs:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if zygote is not None:
            zygote.terminate()
            zygote.wait(timeout=30)
    return out


def platform_tasks(live, tasks: list[str], episodes: int, workers: int, timeout: float = 7200) -> dict:
    """One evaluation of prebuilt/libero-expert over ``tasks`` (``episodes`` each, seed 0: init states 0 …),
    through the live platform; wall time, episodes per minute, per-task successes and the episode records."""
    from tests.support.live import wait_for

    body = {"name": f"bench issue 26: expert, {len(tasks)} tasks x {episodes}", "models": ["prebuilt/libero-expert"],
            "tasks": [{"env": "prebuilt/libero", "taskId": t, "episodes": episodes, "workers": workers,
                       "record": "none"} for t in tasks]}
    r = live.cli("eval", "submit", "-", "--json", stdin=json.dumps(body))
    eval_id = json.JSONDecoder().raw_decode(r.stdout)[0]["id"]
    t0 = time.monotonic()
    try:
        e = wait_for(lambda: (e := live.api(f"/v1/evaluations/{eval_id}"))["status"] in ("completed", "failed") and e,
                     timeout=timeout, interval=2)
    except AssertionError:  # out of time: the episodes recorded so far are the result, labelled as such
        live.cancel_unfinished()
        e = {"status": f"cancelled after {timeout:.0f} s"}
    wall = time.monotonic() - t0
    items = live.episodes(eval_id)
    per_task: dict[str, list[int]] = {}
    for item in items:
        row = per_task.setdefault(item["taskId"], [0, 0])
        row[0] += bool(item.get("success"))
        row[1] += 1
    m = live.api(f"/v1/evaluations/{eval_id}/metrics")
    platform_wall = m.get("wallSeconds") or wall
    return {"id": eval_id, "status": e["status"], "wall_s": wall, "platform_wall_s": platform_wall,
            "episodes": len(items), "per_min": len(items) / platform_wall * 60, "per_task": per_task, "items": items}


def platform(mode: dict, tasks: list[str], episodes: int, workers: int, timeout: float = 7200) -> dict:
    from tests.support.live import LivePlatform

    extra = {k: v for k, v in mode.items()}
    live = LivePlatform(Path(tempfile.mkdtemp(prefix="rlm-bench-26-")), **extra).prepare()
    live.start_web()
    live.start_worker(concurrency=workers)
    try:
        return platform_tasks(live, tasks, episodes, workers, timeout)
    finally:
        live.stop()


def median(xs):
    return statistics.median(xs) if xs else float("nan")
