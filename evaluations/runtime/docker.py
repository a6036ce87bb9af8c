"""The ``docker`` runtime: pushed OCI images run as containers through the Docker Engine API (the ``docker``
SDK; Podman's compatible service here, Docker elsewhere), with the untrusted-image isolation profile.

Every container: pulled by digest with the worker's pull-only registry credential, ``RLMESH_ADDRESS`` set,
the scenario's make kwargs in ``RLMESH_MAKE_KWARGS``, the request's ``envVars``, labels tying it to its
evaluation, capabilities dropped, no new privileges, read-only root with a tmpfs ``/tmp``, memory/CPU/pid
limits, a non-root user. Models: only the serving port published on 127.0.0.1, on the sandbox network (no
egress, no host services, no other containers: ``containers/sandbox-network.sh``). Envs on a local engine: no
network at all, serving on a unix socket in a host directory mounted into the container. Removed on every exit path;
:func:`reap_orphans` removes any whose shard is gone. A model image with a batched corner (``RLMESH_MODEL_BATCH``)
runs as a thin server per shard plus one inference process per evaluation and host in a container with no network
(:func:`start_hub_container`; ``runtime.inference``, ``prebuilt.fused``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings

from .base import RuntimeBackend, RuntimeBackendError, ServedEndpoint, ServerSpec, accepts_connections

SERVING_PORT = "50051/tcp"
#: The user every container runs as.
CONTAINER_UID = 10001
#: Where an env container's unix socket lives inside the container (a host temp dir is mounted there).
CONTAINER_SOCK_DIR = "/run/rlmesh"
#: Where a batched image's inference process keeps its socket, in its container and in its thin servers' (a host
#: folder mounted there: ``ServerSpec.hub_dir``); and where the platform's modules those two run are mounted.
HUB_DIR = "/run/rlmesh-hub"
CODE_DIR = "/opt/rlmesh-platform"
#: The platform's modules an image's inference process and thin servers import (``prebuilt.fused`` and what it
#: imports: stdlib, numpy and rlmesh only), copied once per content into a host folder mounted read-only.
FUSED_FILES = ("evaluations/__init__.py", "evaluations/prebuilt/__init__.py", "evaluations/prebuilt/fused.py",
               "evaluations/prebuilt/lerobot/__init__.py", "evaluations/prebuilt/lerobot/batching.py",
               "evaluations/prebuilt/lerobot/remote.py", "evaluations/prebuilt/lerobot/inference.py")


def unix_env_leg() -> bool:
    """Whether env containers serve on a unix socket: ``RLMESH_CONTAINER_ENV_TRANSPORT`` is ``unix`` (default)
    and the engine is local (``DOCKER_HOST`` is a unix socket), so a host directory can be shared with it."""
    return settings.RLMESH_CONTAINER_ENV_TRANSPORT == "unix" and settings.RLMESH_DOCKER_HOST.startswith("unix://")
LABEL = "dev.rlmesh.platform"


def client():
    import docker

    return docker.DockerClient(base_url=settings.RLMESH_DOCKER_HOST, timeout=120)


def pull(image_ref: str) -> None:
    """Pull ``host/ns/name@sha256:…`` with the worker's credential; RuntimeBackendError on any error event.

    The SDK's ``images.pull`` does not raise on a denied pull, so the low-level stream is checked.
    """
    repo, _, digest = image_ref.partition("@")
    auth = {"username": settings.RLMESH_REGISTRY_WORKER_ACCOUNT, "password": settings.RLMESH_REGISTRY_WORKER_SECRET}
    c = client()
    try:
        for event in c.api.pull(repo, tag=digest or "latest", stream=True, decode=True, auth_config=auth):
            if "error" in event or "errorDetail" in event:
                raise RuntimeBackendError(f"pulling {image_ref} failed: {event.get('error') or event.get('errorDetail')}")
    finally:
        c.close()


def isolation_kwargs() -> dict:
    return {
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "tmpfs": {"/tmp": "rw,size=64m,nosuid,nodev"},
        "mem_limit": settings.RLMESH_CONTAINER_MEMORY,
        "nano_cpus": int(settings.RLMESH_CONTAINER_CPUS * 1e9),
        "pids_limit": settings.RLMESH_CONTAINER_PIDS,
        "user": str(CONTAINER_UID),
        **({"network": settings.RLMESH_CONTAINER_NETWORK, "dns": ["127.0.0.1"]} if settings.RLMESH_CONTAINER_NETWORK else {}),
    }


def fused_code_dir() -> str:
    """A host folder with :data:`FUSED_FILES` (world-readable, under ``RLMESH_RUN_DIR/fused-code/<sha256>``), made
    once per content; mounted read-only at :data:`CODE_DIR` in a batched image's containers."""
    root = Path(settings.BASE_DIR)
    digest = hashlib.sha256()
    for name in FUSED_FILES:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes())
    dest = Path(settings.RLMESH_RUN_DIR) / "fused-code" / digest.hexdigest()[:16]
    if not dest.is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="fused-", dir=dest.parent))
        for name in FUSED_FILES:
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / name, tmp / name)
        for path in [tmp, *tmp.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        try:
            tmp.rename(dest)
        except OSError:  # another worker made it meanwhile: the same content
            shutil.rmtree(tmp, ignore_errors=True)
    return str(dest)


def fused_container_kwargs(c, image: str, hub_dir: str, env_vars: dict | None = None) -> tuple[str, dict, dict]:
    """``(python, environment, volumes)`` for a batched image's inference process or thin server: the image's own
    Python (its ``rlmesh.serve`` entrypoint's, else ``python3``), ``PYTHONPATH`` with :data:`CODE_DIR` before the
    request's (``env_vars``) or else the image's own, and the two mounts (the modules read-only, ``hub_dir``
    read-write at :data:`HUB_DIR`)."""
    config = (c.images.get(image).attrs or {}).get("Config") or {}
    entry = list(config.get("Entrypoint") or [])
    python = entry[0] if entry[1:3] == ["-m", "rlmesh.serve"] else "python3"
    env = dict(e.split("=", 1) for e in config.get("Env") or [] if "=" in e)
    theirs = (env_vars or {}).get("PYTHONPATH", env.get("PYTHONPATH", ""))
    path = ":".join(p for p in (CODE_DIR, str(theirs)) if p)
    volumes = {fused_code_dir(): {"bind": CODE_DIR, "mode": "ro"}, hub_dir: {"bind": HUB_DIR, "mode": "rw"}}
    return python, {"PYTHONPATH": path}, volumes


def start_hub_container(spec: ServerSpec, hub_dir: str, *, name: str, label: str):
    """Start ``spec`` (``kind="inference"``, an ``oci://`` model with a batched corner) as the host's inference
    process of the image (``python -m evaluations.prebuilt.fused``) in a container with no network, listening at
    ``HUB_DIR/inference.sock`` (``hub_dir`` on the host), its batch sizes in ``HUB_DIR/model.batches.json``; labelled
    ``label`` for the reaper. Returns the container; RuntimeBackendError when it cannot start."""
    from ..prebuilt import fused
    from ..prebuilt.lerobot.batching import STATS_ENV

    image = spec.source.removeprefix("oci://")
    pull(image)
    c = client()
    try:
        python, environment, volumes = fused_container_kwargs(c, image, hub_dir, spec.env_vars)
        target = str(spec.kwargs.get(fused.TARGET_KWARG, ""))
        kwargs = {k: v for k, v in isolation_kwargs().items() if k not in ("network", "dns")}
        return c.containers.run(
            image, detach=True, name=f"rlmesh-{name}-{int(time.time() * 1000) % 10**8}",
            entrypoint=[python, "-m", fused.__name__],
            command=["--target", target, "--address", f"unix://{HUB_DIR}/inference.sock",
                     "--kwargs-json", json.dumps(spec.kwargs)],
            environment={**{k: str(v) for k, v in spec.env_vars.items()}, **environment,
                         "RLMESH_WORKFLOW_EDITION": settings.RLMESH_WORKFLOW_EDITION, "PYTHONUNBUFFERED": "1",
                         STATS_ENV: f"{HUB_DIR}/model.batches.json", **spec.secrets},
            labels={LABEL: "1", f"{LABEL}.instance": settings.RLMESH_INSTANCE_ID, f"{LABEL}.name": label},
            network_mode="none", volumes=volumes, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the engine's error text is what the user needs
        raise RuntimeBackendError(f"starting the inference process of {image} failed: {exc}") from exc
    finally:
        c.close()


class Container(ServedEndpoint):
    output_lost_on_stop = True

    def __init__(self, container, address: str, sock_dir: str | None = None):
        self.container = container
        self.address = address
        self.ready_seconds = 0.0
        self._sock_dir = sock_dir

    def alive(self) -> bool:
        try:
            self.container.reload()
        except Exception:  # noqa: BLE001 - gone is not alive
            return False
        return self.container.status == "running"

    def stop(self) -> None:
        self._halt()
        self._remove()

    def stop_with_output(self, lines: int = 20) -> str:
        """Stop the container, read its complete last output (:meth:`final_output`), then remove it."""
        self._halt()
        try:
            return self.final_output(lines)
        finally:
            self._remove()

    def _halt(self) -> None:
        try:
            self.container.stop(timeout=3)
        except Exception:  # noqa: BLE001
            pass

    def _remove(self) -> None:
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001
            pass
        if self._sock_dir:
            shutil.rmtree(self._sock_dir, ignore_errors=True)

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the output so far, cut here from the whole log: the engine's own ``tail`` is
        not used, since Podman (4.3) counts a line written in two pieces as two and can return only its newline."""
        try:
            return _last_lines(self.container.logs(), lines)
        except Exception:  # noqa: BLE001
            return ""

    def final_output(self, lines: int = 20) -> str:
        """The last ``lines`` lines of a stopped (or stopping) container's output, complete.

        Waits for the container to stop, then follows its whole log stream until the engine closes it, which it
        does once every line is delivered; ``RLMESH_CONTAINER_OUTPUT_WAIT`` seconds (default 30) bound the two
        together, however busy the host. Lines are cut here, not by the engine's ``tail``: Podman stores a line
        written in two pieces (Python with ``PYTHONUNBUFFERED`` writes a message and its newline apart; a loaded
        host makes the split likely) as a partial record and a newline record, and its ``tail`` then returns only
        the newline (measured: 4 of 10 crashes of ``rlmesh-broken-crash`` beside a test run; the probe said
        "last output:" and nothing). Returns "" if the container printed nothing or is gone; never raises.
        """
        deadline = time.monotonic() + settings.RLMESH_CONTAINER_OUTPUT_WAIT
        try:
            self.container.wait(timeout=max(1, int(settings.RLMESH_CONTAINER_OUTPUT_WAIT)))
        except Exception:  # noqa: BLE001 - still running at the bound, or gone: read what there is
            pass
        return _last_lines(_follow_to_end(self.container, deadline), lines)


def _last_lines(output: bytes, lines: int) -> str:
    return "\n".join(output.decode(errors="replace").splitlines()[-lines:])


def _follow_to_end(container, deadline: float) -> bytes:
    """All of ``container``'s output: its log stream followed until the engine closes it (it does once a stopped
    container's output is all delivered), read on a helper thread so ``deadline`` (monotonic seconds) bounds it."""
    chunks: list[bytes] = []

    def read() -> None:
        try:
            for chunk in container.logs(stream=True, follow=True):
                chunks.append(chunk)
        except Exception:  # noqa: BLE001 - a gone container or a dropped stream: keep what arrived
            pass

    reader = threading.Thread(target=read, name="container-output", daemon=True)
    reader.start()
    reader.join(max(0.0, deadline - time.monotonic()))
    return b"".join(chunks)


class DockerRuntime(RuntimeBackend):
    """Start ``oci://host/ns/name@sha256:…`` sources as isolated containers (see module docstring)."""

    def start(self, spec: ServerSpec, *, name: str, labels: dict | None = None) -> Container:
        if not spec.source.startswith("oci://"):
            raise RuntimeBackendError(f"the docker runtime cannot serve {spec.source!r}")
        image = spec.source.removeprefix("oci://")
        started = time.monotonic()
        pull(image)
        environment = {
            **{k: str(v) for k, v in spec.env_vars.items()},
            "RLMESH_ADDRESS": "0.0.0.0:50051",
            "RLMESH_WORKFLOW_EDITION": settings.RLMESH_WORKFLOW_EDITION,
            **spec.secrets,
        }
        if spec.kwargs:
            environment["RLMESH_MAKE_KWARGS"] = json.dumps(spec.kwargs)
        from docker.errors import NotFound

        kwargs = {**isolation_kwargs(), "ports": {SERVING_PORT: ("127.0.0.1", None)}}
        sock_dir = None
        if spec.kind == "env" and unix_env_leg():
            # The env leg over a unix socket in a host directory shared with the container: no TCP stall on
            # image observations (bench/bench_image_obs.py: 3.3x), and the env container gets no network at all.
            sock_dir = tempfile.mkdtemp(prefix=f"rlm-c-{os.getpid()}-")
            os.chmod(sock_dir, 0o777)  # the server runs as uid 10001 and creates the socket here
            environment["RLMESH_ADDRESS"] = f"unix://{CONTAINER_SOCK_DIR}/env.sock"
            for key in ("ports", "network", "dns"):
                kwargs.pop(key, None)
            kwargs.update(network_mode="none", volumes={sock_dir: {"bind": CONTAINER_SOCK_DIR, "mode": "rw"}})
        c = client()
        if spec.kind == "model" and spec.hub_dir:
            # A thin server of a batched image (runtime.inference): rlmesh.serve of prebuilt.fused's thin model, which
            # asks the host's inference process through its socket folder, mounted here.
            python, extra, volumes = fused_container_kwargs(c, image, spec.hub_dir, spec.env_vars)
            environment.update(extra)
            kwargs.update(entrypoint=[python, "-m", "rlmesh.serve"], command=["evaluations.prebuilt.fused:Thin"],
                          volumes=volumes)
        try:
            container = c.containers.run(
                image, detach=True, name=f"rlmesh-{name}-{int(time.time() * 1000) % 10**8}",
                environment=environment,
                labels={LABEL: "1", f"{LABEL}.instance": settings.RLMESH_INSTANCE_ID, f"{LABEL}.name": name, **(labels or {})},
                **kwargs,
            )
        except NotFound as exc:
            network = settings.RLMESH_CONTAINER_NETWORK
            hint = (f" (is the sandbox network {network!r} missing? run containers/sandbox-network.sh, or set "
                    f"RLMESH_CONTAINER_NETWORK='' for the default bridge)") if network and "network" in str(exc) else ""
            raise RuntimeBackendError(f"starting {image} failed: {exc}{hint}") from exc
        except Exception as exc:  # noqa: BLE001 - the engine's error text is what the user needs
            if sock_dir:
                shutil.rmtree(sock_dir, ignore_errors=True)
            raise RuntimeBackendError(f"starting {image} failed: {exc}") from exc
        server = Container(container, f"unix://{sock_dir}/env.sock" if sock_dir else "", sock_dir=sock_dir)
        return self.become_ready(server, lambda: self._wait_ready(server, spec.kind, started), started)

    def _wait_ready(self, server: Container, kind: str, started: float) -> str:
        deadline = started + settings.RLMESH_SERVER_READY_TIMEOUT
        address = ""
        while True:
            server.container.reload()
            if server.container.status in ("exited", "dead"):
                code = server.container.attrs.get("State", {}).get("ExitCode")
                raise RuntimeBackendError(f"{kind} container exited with code {code} before it was ready",
                                          log_tail=server.final_output())
            if not address and server.address:
                address = server.address
            if not address:
                bindings = (server.container.ports or {}).get(SERVING_PORT) or []
                if bindings:
                    address = f"127.0.0.1:{bindings[0]['HostPort']}"
            if address and accepts_connections(address, kind):
                return address
            if time.monotonic() > deadline:
                raise RuntimeBackendError(
                    f"{kind} container not ready after {settings.RLMESH_SERVER_READY_TIMEOUT:g} s",
                    permanent=False, log_tail=server.stop_with_output(),
                )
            time.sleep(0.2)


def reap_orphans(live_names: set[str]) -> list[str]:
    """Remove this deployment's containers whose ``name`` label is not in ``live_names``; return the removed
    names. Containers of other deployments on the same engine (another ``instance`` label) are left alone."""
    removed = []
    c = client()
    try:
        for container in c.containers.list(all=True, filters={"label": f"{LABEL}.instance={settings.RLMESH_INSTANCE_ID}"}):
            name = container.labels.get(f"{LABEL}.name", "")
            if name not in live_names:
                container.remove(force=True)
                removed.append(name)
    finally:
        c.close()
    return removed
