"""Image observations over each transport of the env and model legs, in one run (not a timed test; spec/ENVS.md §4.3,
docs/working/image-transport.md).

Two observation sizes (bench/image_env.py): a 128×128×3 image + 4-d state (48 KB), and LIBERO's two 256×256×3 cameras
+ 8-d state (384 KB). Each is served by ``rlmesh.serve`` on TCP loopback and on a unix socket; a model that reads
every image (spec-less, so the whole observation crosses the model leg) is served on TCP as ``python -m rlmesh.serve``
(as the local runtime did before) and through the platform's launcher, which sets ``TCP_NODELAY`` on its listener
(``evaluations/runtime/tcp_nodelay.py``, what the local runtime now does). The paths, as ``env leg / model leg``:

- ``tcp / tcp``: both legs on TCP as rlmesh serves them (the "TCP path" the issue's 10× target refers to);
- ``tcp+nd / tcp+nd``: both on TCP with ``TCP_NODELAY`` on the servers' listeners (the fix at its cause);
- ``unix / tcp``: env on a unix socket, model on plain TCP (the local runtime until now);
- ``unix / tcp+nd``: env on a unix socket, model on TCP with ``TCP_NODELAY`` (the local runtime's default now);
- ``unix / in-proc``: the model loaded in the driver, no model leg at all (co-location's bound: rlmesh's model client
  refuses ``unix://``, so this is the closest the model leg gets to a unix socket).

Each path runs the platform's loop, ``rlmesh.run(model, env, seeds=range(N))``; prints steps/s, per-step env-step and
predict latency (rlmesh's own per-episode means) and each path's throughput ratio to ``tcp / tcp`` and to ``unix / tcp``.
Usage: ``.venv/bin/python bench/bench_image_obs.py [episodes]`` (200 steps each; default 2).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")

from evaluations.runtime import tcp_nodelay  # noqa: E402 - stdlib only: no Django settings needed

#: name → (env factory, model class, observation bytes)
SIZES = {
    "128²": ("bench.image_env:ImageObs", "Constant", 128 * 128 * 3 + 16),
    "LIBERO 2×256²": ("bench.image_env:LiberoObs", "LiberoConstant", 2 * 256 * 256 * 3 + 32),
}
PATHS = ("tcp / tcp", "tcp+nd / tcp+nd", "unix / tcp", "unix / tcp+nd", "unix / in-proc")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(args: list[str], *, nodelay: bool) -> subprocess.Popen:
    """``rlmesh.serve <args>`` as the local runtime starts it (with or without the TCP_NODELAY launcher)."""
    launcher = [tcp_nodelay.__file__] if nodelay else []
    return subprocess.Popen([sys.executable, *launcher, "-m", "rlmesh.serve", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _wait(address: str, kind: str) -> None:
    """Until the env answers a handshake, or the model's TCP port accepts connections (60 s at most)."""
    import rlmesh

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if kind == "env":
                rlmesh.numpy.RemoteEnv(address, connect_timeout_seconds=1).close()
            else:
                host, port = address.rsplit(":", 1)
                socket.create_connection((host, int(port)), timeout=1).close()
            return
        except (ConnectionError, OSError, TimeoutError):
            time.sleep(0.1)
    raise SystemExit(f"{address} not ready")


def drive(model, env_address: str, episodes: int) -> dict:
    """``episodes`` episodes of ``model`` (a RemoteModel or a local Model) on the env at ``env_address``."""
    import rlmesh

    t0 = time.perf_counter()
    result = rlmesh.run(model, rlmesh.RemoteEnv(env_address), seeds=range(episodes))
    wall = time.perf_counter() - t0
    steps = sum(e.steps for e in result.episodes)
    step_ms = sum(e.step_ms * e.steps for e in result.episodes) / steps
    predict_ms = sum(e.predict_ms * e.steps for e in result.episodes) / steps
    return {"steps": steps, "seconds": round(wall, 2), "stepsPerSecond": round(steps / wall, 1),
            "msPerStep": round(wall * 1000 / steps, 2), "envStepMs": round(step_ms, 2), "predictMs": round(predict_ms, 2)}


def measure(env_factory: str, model_class: str, episodes: int) -> dict:
    """Every path of ``PATHS`` on one observation size; servers started here and killed before returning."""
    import rlmesh

    from bench.image_env import Constant, LiberoConstant

    sock_dir = tempfile.mkdtemp(prefix="rlm-bench-")
    env = {"tcp": f"127.0.0.1:{_port()}", "tcp+nd": f"127.0.0.1:{_port()}", "unix": f"unix://{sock_dir}/env.sock"}
    model = {"tcp": f"127.0.0.1:{_port()}", "tcp+nd": f"127.0.0.1:{_port()}"}
    procs = [_serve(["--env", env_factory, "--address", address], nodelay=leg == "tcp+nd") for leg, address in env.items()]
    procs += [_serve([f"bench.image_env:{model_class}", "--address", address], nodelay=leg == "tcp+nd")
              for leg, address in model.items()]
    try:
        for address in env.values():
            _wait(address, "env")
        for address in model.values():
            _wait(address, "model")
        local_model = {"Constant": Constant, "LiberoConstant": LiberoConstant}[model_class]()
        drive(rlmesh.RemoteModel(model["tcp"]), env["unix"], 1)  # warm-up
        rows = {}
        for path in PATHS:
            env_leg, model_leg = path.split(" / ")
            target = local_model if model_leg == "in-proc" else rlmesh.RemoteModel(model[model_leg])
            rows[path] = drive(target, env[env_leg], episodes)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return rows


def report(name: str, nbytes: int, episodes: int, rows: dict) -> None:
    print(f"\n{name} observations ({nbytes // 1024} KB a step), {episodes} episodes × 200 steps per path")
    print(f"{'env / model leg':18} {'steps/s':>8} {'ms/step':>8} {'env step ms':>12} {'predict ms':>11} "
          f"{'× tcp/tcp':>10} {'× unix/tcp':>11}")
    base, today = rows["tcp / tcp"]["stepsPerSecond"], rows["unix / tcp"]["stepsPerSecond"]
    for path, r in rows.items():
        sps = r["stepsPerSecond"]
        print(f"{path:18} {sps:>8} {r['msPerStep']:>8} {r['envStepMs']:>12} {r['predictMs']:>11} "
              f"{sps / base:>9.2f}× {sps / today:>10.2f}×")


def main() -> None:
    episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    results = {}
    for name, (env_factory, model_class, nbytes) in SIZES.items():
        results[name] = measure(env_factory, model_class, episodes)
        report(name, nbytes, episodes, results[name])
    with open("/proc/loadavg") as f:
        print(f"\nload average at the end: {f.read().split()[0]} on {os.cpu_count()} CPUs")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
