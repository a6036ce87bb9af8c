"""The same CartPole episodes on the two runtimes, in one run (not a timed test):

(a) ``local``: env and model as ``python -m rlmesh.serve`` subprocesses (env on a unix socket, model on TCP);
(b) ``docker``: the same code as images (containers/images/), started by the platform's DockerRuntime through
    the Docker Engine API (Podman's service) with the full isolation profile: the env without a network,
    serving on a unix socket in a shared directory; the model on the sandbox network, port on 127.0.0.1.

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


def docker(n: int) -> dict:
    """The platform's own DockerRuntime (isolation profile; env on a unix socket with no network, model on the
    sandbox network), on the locally built catalog images (no registry pull)."""
    from evaluations.runtime import ServerSpec
    from evaluations.runtime import docker as runtime

    runtime.pull = lambda image_ref: None  # localhost/ images are already in the engine's store
    rt = runtime.DockerRuntime()
    env = rt.start(ServerSpec("env", "oci://localhost/rlmesh-classic-control:latest", {"env_id": "CartPole-v1"}), name="bench-docker-env")
    try:
        model = rt.start(ServerSpec("model", "oci://localhost/rlmesh-classic-control-heuristics:latest"), name="bench-docker-model")
        try:
            wall, steps = drive(env.address, model.address, n)
        finally:
            model.stop()
    finally:
        env.stop()
    return {"ready": (env.ready_seconds, model.ready_seconds), "wall": wall, "steps": steps, "env": env.address}


def main() -> None:
    import django

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    var = Path(tempfile.mkdtemp(prefix="rlm-bench-"))
    os.environ["DOCKER_HOST"] = f"unix://{var}/podman.sock"
    django.setup()
    service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{var}/podman.sock"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not (var / "podman.sock").exists():
            time.sleep(0.1)
        a = local(n)
        b = docker(n)
    finally:
        service.terminate()
    print(f"CartPole-v1, heuristic model, {n} episodes, one rlmesh.run(RemoteModel, env) per runtime")
    for name, r in (("local (subprocesses, env on unix socket)", a), ("docker (isolated containers; env unix socket)", b)):
        print(f"  {name:42} start-to-ready env {r['ready'][0]:.2f} s, model {r['ready'][1]:.2f} s; "
              f"{r['steps']} steps in {r['wall']:.2f} s = {r['steps'] / r['wall']:.0f} steps/s")
    print(f"  docker / local wall time: {b['wall'] / a['wall']:.3f}x")


if __name__ == "__main__":
    main()
