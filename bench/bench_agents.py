"""Agent evaluation costs in one run (not a timed test): the MiniWoB env in Chromium, the endpoint bridge, and the
reference agent's pass rate, all as real processes on loopback.

Prints (milliseconds unless noted):

1. env: ``make()`` + first ``reset`` (Chromium start), later ``reset``s, and in-process step latency per tool
   (``type_text``, ``click`` on a label, ``press_key``, ``wait(0)``), p50/p95;
2. memory: PSS (``/proc/<pid>/smaps_rollup``) of one served env's process tree (python + chromedriver + Chromium);
3. the bridge: its own time per step (``trace.overheadMs``: everything but the endpoint call), seen from the driver
   ``predict`` minus the endpoint call (adds the rlmesh RPC hop), and ``predict`` minus the same request replayed
   straight to the endpoint with ``http.client`` (adds the openai client too), p50/p95;
4. the reference agent's pass rate per task over ``--seeds`` seeds (chat completions with tools), with the env's
   ``step`` and the bridge's ``predict`` p50 from the driver.

``--catalog`` instead resets every catalog task once (one Chromium each) and prints its goal and element count.

Usage: ``.venv/bin/python bench/bench_agents.py [--seeds 5] [--tasks click-test,login-user] [--catalog]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")
os.environ.setdefault("MINIWOB_CHROME_BINARY", "/usr/bin/chromium")
os.environ.setdefault("MINIWOB_CHROMEDRIVER", "/usr/bin/chromedriver")
# The bridge started below calls the reference agent on loopback, as the platform allows it when the operator does.
os.environ.setdefault("RLMESH_AGENT_ALLOW_PRIVATE_TARGETS", "true")
KEY = "sk-bench-" + os.urandom(6).hex()
LOGS = Path(tempfile.mkdtemp(prefix="bench-agents-"))


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def fmt(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5):7.1f}  p95 {pct(values, 0.95):7.1f}  (n={len(values)})"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], name: str, port: int | None = None, **env: str) -> subprocess.Popen:
    log = open(LOGS / f"{name}.log", "w")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    deadline = time.monotonic() + 60
    while port and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited: {(LOGS / f'{name}.log').read_text()[-2000:]}") from None
            time.sleep(0.1)
    return proc


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def call(tool: str, **arguments) -> str:
    return json.dumps({"tool": tool, "arguments": arguments})


def bench_env(resets: int = 10, steps: int = 10) -> None:
    """In-process: start, reset and per-tool step latency on login-user."""
    from evaluations.prebuilt.miniwob import MiniWoB

    t0 = time.perf_counter()
    env = MiniWoB().make(task="login-user")
    obs, _ = env.reset(seed=0)
    first = (time.perf_counter() - t0) * 1000
    times: dict[str, list[float]] = {"reset": [], "type_text": [], "click": [], "press_key": [], "wait(0)": []}
    for seed in range(1, resets + 1):
        t = time.perf_counter()
        obs, _ = env.reset(seed=seed)
        times["reset"].append((time.perf_counter() - t) * 1000)
    refs = {line.split("]")[0].strip()[1:]: line for line in obs["dom"].splitlines()}
    username = next(int(r) for r, line in refs.items() if "id=username" in line)
    label = next(int(r) for r, line in refs.items() if "label" in line)
    actions = {"type_text": call("type_text", ref=username, text="ab"), "click": call("click", ref=label),
               "press_key": call("press_key", key="<Backspace>"), "wait(0)": call("wait", ms=0)}
    for _ in range(steps):
        for name, action in actions.items():
            t = time.perf_counter()
            env.step(action)
            times[name].append((time.perf_counter() - t) * 1000)
    env.close()
    print(f"env  make + first reset (Chromium start): {first:7.0f} ms")
    for name, values in times.items():
        print(f"env  {name:10s} {fmt(values)}")


def tree_pss_mb(pid: int) -> float:
    """PSS (MB) of ``pid`` and all its descendants."""
    children = {p: [] for p in os.listdir("/proc") if p.isdigit()}
    for p in list(children):
        try:
            ppid = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1]
            children.setdefault(ppid, []).append(p)
        except (OSError, IndexError):
            pass
    todo, total = [str(pid)], 0
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def bench_memory() -> None:
    import rlmesh

    port = free_port()
    proc = start([sys.executable, "-m", "rlmesh.serve", "--env", "evaluations.prebuilt.miniwob:MiniWoB", "--address",
                  f"127.0.0.1:{port}", "--kwargs-json", '{"task": "login-user"}'], "env-memory", port)
    try:
        env = rlmesh.numpy.RemoteEnv(f"127.0.0.1:{port}", connect_timeout_seconds=10)
        env.reset(seed=0)
        pss = tree_pss_mb(proc.pid)
        print(f"mem  one served env after a reset (python + chromedriver + Chromium): PSS {pss:.0f} MB")
        env.close()
    finally:
        stop(proc)


def replay_ms(conn, trace: dict) -> float:
    """The endpoint's own latency for a traced chat request, replayed with ``http.client`` (keep-alive)."""
    body = json.dumps(trace["request"]["body"])
    t = time.perf_counter()
    conn.request("POST", urllib.parse.urlsplit(trace["request"]["url"]).path, body=body,
                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"})
    conn.getresponse().read()
    return (time.perf_counter() - t) * 1000


def run_task(task: str, bridge: str, seeds: int, conn) -> dict[str, list[float] | int]:
    """One task over ``seeds`` seeds through an explicit session loop: passes and per-step timings (ms)."""
    import rlmesh

    from evaluations.prebuilt.miniwob import TASKS

    port = free_port()
    proc = start([sys.executable, "-m", "rlmesh.serve", "--env", "evaluations.prebuilt.miniwob:MiniWoB", "--address",
                  f"127.0.0.1:{port}", "--kwargs-json", json.dumps({"task": task})], f"env-{task}", port)
    passes, step_ms, predict_ms, hop_ms, overhead_ms, raw_ms = 0, [], [], [], [], []
    try:
        env = rlmesh.numpy.RemoteEnv(f"127.0.0.1:{port}", connect_timeout_seconds=10)
        model = rlmesh.numpy.RemoteModel(bridge, connect_timeout_seconds=10)
        with rlmesh.session(model, env) as session:
            for seed in range(seeds):
                obs, _ = session.reset(seed=seed)
                for _ in range(TASKS[task].max_steps):
                    t = time.perf_counter()
                    action = session.predict(obs)
                    predict_ms.append((time.perf_counter() - t) * 1000)
                    trace = json.loads(str(action))["trace"]
                    hop_ms.append(predict_ms[-1] - trace["latencyMs"] - trace["backoffMs"])
                    overhead_ms.append(trace["overheadMs"])
                    raw_ms.append(predict_ms[-1] - replay_ms(conn, trace))
                    assert KEY not in str(action)
                    t = time.perf_counter()
                    obs, _, terminated, truncated, info = session.step(action)
                    step_ms.append((time.perf_counter() - t) * 1000)
                    if terminated or truncated:
                        break
                passes += bool(info.get("is_success"))
        env.close()
    finally:
        stop(proc)
    return {"passes": passes, "step": step_ms, "predict": predict_ms, "hop": hop_ms, "overhead": overhead_ms,
            "raw": raw_ms}


def bench_agent(tasks: list[str], seeds: int) -> None:
    from evaluations.agents.reference_agent import make_server


    server = make_server()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    port = free_port()
    bridge = start([sys.executable, "-m", "rlmesh.serve", "evaluations.agents.bridge:EndpointBridge", "--address",
                    f"127.0.0.1:{port}", "--kwargs-json", json.dumps({"url": url, "model": "reference"})],
                   "bridge", port, RLMESH_ENDPOINT_KEY=KEY)
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1])
    total: dict[str, list[float]] = {"step": [], "predict": [], "hop": [], "overhead": [], "raw": []}
    try:
        for task in tasks:
            t0 = time.perf_counter()
            got = run_task(task, f"127.0.0.1:{port}", seeds, conn)
            for name in total:
                total[name] += got[name]
            print(f"agent {task:18s} pass {got['passes']}/{seeds}  steps {len(got['step']):3d}  env.step p50 "
                  f"{pct(got['step'], .5):6.1f}  predict p50 {pct(got['predict'], .5):6.1f}  "
                  f"({time.perf_counter() - t0:.1f} s)")
    finally:
        stop(bridge)
        server.shutdown()
    print(f"bridge own time per step (trace.overheadMs)          {fmt(total['overhead'])}")
    print(f"bridge predict minus endpoint call (driver view)     {fmt(total['hop'])}")
    print(f"bridge predict minus the same request sent raw       {fmt(total['raw'])}")
    print(f"driver env.step over rlmesh                          {fmt(total['step'])}")
    print(f"driver predict over rlmesh (bridge + endpoint)       {fmt(total['predict'])}  "
          f"mean {statistics.mean(total['predict']):.1f}")


def bench_catalog() -> None:
    from evaluations.prebuilt.miniwob import TASKS, MiniWoB

    for task in TASKS:
        t0 = time.perf_counter()
        try:
            env = MiniWoB().make(task=task)
            obs, _ = env.reset(seed=0)
            env.close()
            print(f"catalog {task:26s} {len(obs['dom'].splitlines()):3d} elements {time.perf_counter() - t0:5.1f} s"
                  f"  {obs['goal'][:70]!r}")
        except Exception as exc:  # noqa: BLE001 - report every task
            print(f"catalog {task:26s} FAILED {type(exc).__name__}: {str(exc)[:120]}")


def main() -> None:
    from evaluations.prebuilt.miniwob import REFERENCE_SOLVED

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tasks", default=",".join(REFERENCE_SOLVED))
    parser.add_argument("--catalog", action="store_true")
    args = parser.parse_args()
    if args.catalog:
        return bench_catalog()
    print(f"(logs in {LOGS}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    bench_env()
    bench_memory()
    bench_agent(args.tasks.split(","), args.seeds)


if __name__ == "__main__":
    main()
