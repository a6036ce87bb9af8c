"""The same CartPole episodes on the two runtimes, in one run (not a timed test):

(a) ``local``: env and model as ``python -m rlmesh.serve`` subprocesses (env on a unix socket, model on TCP);
(b) ``docker``: the same code as images (containers/images/), started through the Docker Engine API
    (Podman's service) with the full isolation profile, ports published on 127.0.0.1.

Each side is driven by one ``rlmesh.run(RemoteModel, env, seeds=range(N))``. Prints start-to-ready and
steps/s of both, and the ratio. Needs containers/setup-host.sh, build-base.sh and build-images.sh.
Usage: ``.venv/bin/python bench/bench_runtimes.py [N]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rlmesh_site.settings")
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")


def drive(env_address: str, model_address: str, n: int) -> tuple[float, int]:
    import rlmesh

    t0 = time.perf_counter()
    result = rlmesh.run(rlmesh.RemoteModel(model_address), env_address, seeds=range(n))
    return time.perf_counter() - t0, sum(e.steps for e in result.episodes)


def local(n: int) -> dict:
    from evaluations.runtime import ServerSpec
    from evaluations.runtime.local import LocalRuntime

    rt = LocalRuntime()
    env = rt.start(ServerSpec("env", "python://evaluations.prebuilt.envs:ClassicControl", {"env_id": "CartPole-v1"}), name="bench-local-env")
    model = rt.start(ServerSpec("model", "python://evaluations.prebuilt.models:ClassicControlHeuristics"), name="bench-local-model")
    try:
        wall, steps = drive(env.address, model.address, n)
    finally:
        env.stop()
        model.stop()
    return {"ready": (env.ready_seconds, model.ready_seconds), "wall": wall, "steps": steps}


def docker(n: int, sock: str) -> dict:
    import docker as sdk

    from evaluations.runtime.docker import isolation_kwargs

    client = sdk.DockerClient(base_url=f"unix://{sock}")
    started = {}
    containers = []
    try:
        for kind, image in (("env", "localhost/rlmesh-classic-control:latest"), ("model", "localhost/rlmesh-classic-control-heuristics:latest")):
            t0 = time.perf_counter()
            c = client.containers.run(image, detach=True, ports={"50051/tcp": ("127.0.0.1", None)},
                                      environment={"RLMESH_MAKE_KWARGS": '{"env_id": "CartPole-v1"}'} if kind == "env" else {},
                                      labels={"dev.rlmesh.platform": "1", "dev.rlmesh.platform.name": f"bench-{kind}"}, **isolation_kwargs())
            containers.append(c)
            import socket
            while True:
                c.reload()
                ports = (c.ports or {}).get("50051/tcp")
                if ports:
                    try:
                        socket.create_connection(("127.0.0.1", int(ports[0]["HostPort"])), timeout=0.5).close()
                        break
                    except OSError:
                        pass
                time.sleep(0.05)
            started[kind] = (f"127.0.0.1:{ports[0]['HostPort']}", time.perf_counter() - t0)
        time.sleep(0.5)  # the env's listener is up before its first handshake is served
        wall, steps = drive(started["env"][0], started["model"][0], n)
    finally:
        for c in containers:
            c.remove(force=True)
    return {"ready": (started["env"][1], started["model"][1]), "wall": wall, "steps": steps}


def main() -> None:
    import django

    django.setup()
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    var = Path(tempfile.mkdtemp(prefix="rlm-bench-"))
    service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{var}/podman.sock"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not (var / "podman.sock").exists():
            time.sleep(0.1)
        a = local(n)
        b = docker(n, str(var / "podman.sock"))
    finally:
        service.terminate()
    print(f"CartPole-v1, heuristic model, {n} episodes, one rlmesh.run(RemoteModel, env) per runtime")
    for name, r in (("local (subprocesses, env on unix socket)", a), ("docker (isolated containers, TCP)", b)):
        print(f"  {name:42} start-to-ready env {r['ready'][0]:.2f} s, model {r['ready'][1]:.2f} s; "
              f"{r['steps']} steps in {r['wall']:.2f} s = {r['steps'] / r['wall']:.0f} steps/s")
    print(f"  docker / local wall time: {b['wall'] / a['wall']:.3f}x")


if __name__ == "__main__":
    main()
