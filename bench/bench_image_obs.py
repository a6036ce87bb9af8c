"""Image observations over the env leg's two transports, in one run (not a timed test; spec/ENVS.md §4.3).

A 128×128×3 image env (bench/image_env.py) is served twice by ``python -m rlmesh.serve``: on TCP loopback and
on a unix socket (what the local runtime uses for envs it co-locates with the worker). The same spec-less model
server (TCP; rlmesh's model client takes only TCP) acts on both. Each side runs the platform's loop,
``rlmesh.run(RemoteModel, env, seeds=range(N))``; prints steps/s, per-step latency and the unix/TCP ratio.
Usage: ``.venv/bin/python bench/bench_image_obs.py [episodes] [size]``.
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
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rlmesh.serve", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _wait(address: str, kind: str) -> None:
    """Until the env answers a handshake, or the model's TCP port accepts connections (30 s at most)."""
    import rlmesh

    deadline = time.monotonic() + 30
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


def drive(env_address: str, model_address: str, episodes: int) -> dict:
    import rlmesh

    t0 = time.perf_counter()
    result = rlmesh.run(rlmesh.RemoteModel(model_address), rlmesh.RemoteEnv(env_address), seeds=range(episodes))
    wall = time.perf_counter() - t0
    steps = sum(e.steps for e in result.episodes)
    step_ms = sum(e.step_ms * e.steps for e in result.episodes) / steps
    predict_ms = sum(e.predict_ms * e.steps for e in result.episodes) / steps
    return {"steps": steps, "seconds": round(wall, 2), "stepsPerSecond": round(steps / wall, 1),
            "envStepMs": round(step_ms, 2), "predictMs": round(predict_ms, 2)}


def main() -> None:
    episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    kwargs = json.dumps({"size": size})
    sock_dir = tempfile.mkdtemp(prefix="rlm-bench-")
    tcp_env, unix_env, model = f"127.0.0.1:{_port()}", f"unix://{sock_dir}/env.sock", f"127.0.0.1:{_port()}"
    procs = [
        _serve(["--env", "bench.image_env:ImageObs", "--address", tcp_env, "--kwargs-json", kwargs]),
        _serve(["--env", "bench.image_env:ImageObs", "--address", unix_env, "--kwargs-json", kwargs]),
        _serve(["bench.image_env:Constant", "--address", model]),
    ]
    try:
        _wait(tcp_env, "env")
        _wait(unix_env, "env")
        _wait(model, "model")
        drive(unix_env, model, 1)  # warm-up
        rows = {"tcp": drive(tcp_env, model, episodes), "unix": drive(unix_env, model, episodes)}
    finally:
        for p in procs:
            p.kill()
            p.wait()
    print(f"{size}×{size}×3 uint8 image observations ({size * size * 3 // 1024} KB), {episodes} episodes × 200 steps")
    print(f"{'env leg':8} {'steps/s':>9} {'env step ms':>12} {'predict ms':>11} {'seconds':>8}")
    for name, r in rows.items():
        print(f"{name:8} {r['stepsPerSecond']:>9} {r['envStepMs']:>12} {r['predictMs']:>11} {r['seconds']:>8}")
    print(f"unix / tcp throughput: {rows['unix']['stepsPerSecond'] / rows['tcp']['stepsPerSecond']:.2f}×")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
