"""A batching model on the local runtime (a LeRobot checkpoint, or a trusted rlmesh model with a batched corner:
:mod:`evaluations.prebuilt.fused`): the host's inference process (one per evaluation and way of
serving the model, shared by every shard on the host through :mod:`.shared`'s leases) and a thin rlmesh model server
per shard that asks it (:mod:`evaluations.prebuilt.lerobot.inference` says why: rlmesh serves one session's predict
at a time, so only separate servers calling one process concurrently meet in its batcher).

The shard sees one :class:`BatchedModel`: its address is the thin server's; it is alive while both processes are;
stopping it stops the thin server and releases the lease (the last lease stops the inference process); the batch
sizes seen are the inference process's. A process found running is pinged before it is leased: one that does not
answer, or has had a request in flight past ``RLMESH_INFERENCE_STALL_SECONDS``, is killed and another started. The
key the two share (``RLMESH_INFERENCE_KEY``) is derived from the site's ``SECRET_KEY`` and the registry key, so every
worker process of the host derives the same one and it is never written down.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from pathlib import Path

from django.conf import settings

from ..prebuilt import fused
from ..prebuilt.lerobot.entry import LEROBOT_SOURCE
from ..prebuilt.lerobot.remote import KEY_ENV, InferenceClient, address_path
from . import shared
from .base import ServedEndpoint, ServerSpec
from .local import LocalRuntime

__all__ = ["BatchedModel", "batches", "responsive", "start", "unbatched"]


def batches(spec: ServerSpec) -> bool:
    """Whether ``spec`` is served through a host inference process: the platform's LeRobot server with a batch
    shape (``RLMESH_MODEL_BATCH`` ≥ 1 recorded as the ``batch`` load kwarg), or an rlmesh model with a batched corner
    and a recorded batch shape (``fused.BATCH_KWARG``; an image's also with its class, ``fused.TARGET_KWARG``;
    ``evaluations.prebuilt.fused``)."""
    try:
        if spec.kind != "model":
            return False
        if spec.source == LEROBOT_SOURCE:
            return int(spec.kwargs.get("batch", 0)) >= 1
        if spec.source.startswith("oci://") and not spec.kwargs.get(fused.TARGET_KWARG):
            return False  # an image whose model class is not known: its thin servers could not declare it
        return spec.source.startswith(("python", "oci://")) and int(spec.kwargs.get(fused.BATCH_KWARG, 0)) >= 1
    except (TypeError, ValueError):
        return False


def unbatched(spec: ServerSpec) -> ServerSpec:
    """``spec`` without the batch keys ``prebuilt.fused`` reads (what ``rlmesh.serve`` of the model takes)."""
    kwargs = {k: v for k, v in spec.kwargs.items() if k not in (fused.BATCH_KWARG, fused.WAIT_KWARG, fused.TARGET_KWARG)}
    return ServerSpec(spec.kind, spec.source, kwargs, dict(spec.env_vars), dict(spec.secrets), spec.ready_timeout)


def _thin_spec(spec: ServerSpec, address: str, secrets: dict) -> ServerSpec:
    """The shard's thin model server of ``spec`` asking the inference process at ``address``: the LeRobot server
    with ``inference=``, or, for an rlmesh model, ``fused``'s thin model of it on the same interpreter."""
    if spec.source == LEROBOT_SOURCE:
        return ServerSpec("model", spec.source, {"inference": address}, secrets=secrets)
    if spec.source.startswith("oci://"):  # a container of the image, the process's socket folder mounted in it
        from .docker import HUB_DIR

        return ServerSpec("model", spec.source, {"inference": f"unix://{HUB_DIR}/inference.sock"},
                          env_vars=spec.env_vars, secrets={**secrets, fused.TARGET_ENV: spec.kwargs[fused.TARGET_KWARG]},
                          hub_dir=str(Path(address_path(address)).parent))
    scheme, _, target = spec.source.partition("://")
    return ServerSpec("model", f"{scheme}://{fused.__name__}:Thin", {"inference": address},
                      secrets={**secrets, fused.TARGET_ENV: target})


class BatchedModel(ServedEndpoint):
    """A shard's thin model server (``thin``) and its lease on the host's inference process (``hub``)."""

    def __init__(self, thin: ServedEndpoint, hub: shared.SharedServer, in_container: bool = False):
        self.thin, self.hub, self.in_container = thin, hub, in_container
        self.address = thin.address
        self.ready_seconds = thin.ready_seconds + hub.ready_seconds
        self.stats_path = hub.stats_path
        self.owner = hub.owner

    def alive(self) -> bool:
        return self.thin.alive() and self.hub.alive()

    def batch_stats(self) -> dict | None:
        if self.in_container and getattr(self.hub, "_sock_dir", None) and self.stats_path is not None:
            # The image's process writes them in its socket folder; its owner copies them now and then, and here
            # they are copied as they are now, with the same care (runtime.container_hub.copy_stats).
            from .container_hub import copy_stats

            copy_stats(Path(self.hub._sock_dir) / "model.batches.json", str(self.stats_path))
        return super().batch_stats()

    def orphaned(self) -> bool:
        return self.hub.orphaned()

    def stop(self) -> None:
        self.thin.stop()
        self.hub.stop()

    def log_tail(self, lines: int = 20) -> str:
        hub = self.hub.log_tail(lines)
        return self.thin.log_tail(lines) + (f"\n-- the host's inference process:\n{hub}" if hub else "")


def responsive(address: str, key: bytes) -> bool:
    """Whether the inference process at ``address`` answers a ping within ``HANDSHAKE_TIMEOUT`` and has had no
    request in flight for longer than ``RLMESH_INFERENCE_STALL_SECONDS``."""
    client = InferenceClient(address, key)
    try:
        return client.ping() <= settings.RLMESH_INFERENCE_STALL_SECONDS
    except RuntimeError:
        return False
    finally:
        client.close()


def start(key: str, spec: ServerSpec, backend, name: str, on_hub_started, label: str = "") -> BatchedModel:
    """The shard's :class:`BatchedModel` for ``spec`` (:func:`batches` true) on ``backend`` (the local runtime, or
    the docker runtime for an image): a lease on the inference process ``key`` (started now when none runs on the
    host, then passed to ``on_hub_started(server)``; an image's runs in a container a local process owns, named
    ``label`` for the reaper) and a thin server named ``name``. Raises what starting either raises; nothing is left
    running then."""
    secret = hmac.new(settings.SECRET_KEY.encode(), key.encode(), hashlib.sha256).hexdigest()
    secrets = {**spec.secrets, KEY_ENV: secret}
    hub_spec = ServerSpec("inference", spec.source, dict(spec.kwargs), env_vars=dict(spec.env_vars), secrets=secrets,
                          ready_timeout=spec.ready_timeout)
    in_container = spec.source.startswith("oci://")

    def start_hub():
        # Named by the shard that started it, and unique: a later one's log and batch counts are its own.
        hub_name = f"{name}-inference-{uuid.uuid4().hex[:8]}"
        server = (LocalRuntime().start(hub_spec, name=hub_name, labels={"name": label or hub_name}) if in_container
                  else backend.start(hub_spec, name=hub_name))
        try:
            on_hub_started(server)
        except BaseException:
            server.stop()
            raise
        return server

    # Workers that derive another key (another SECRET_KEY, mid-deploy) get a process of their own.
    registry = f"{key}-{hashlib.sha256(secret.encode()).hexdigest()[:8]}"
    hub = shared.acquire(registry, start_hub)
    if hub.reused and not responsive(hub.address, secret.encode()):
        # Running but wedged (a forward pass that never returns): the shards leasing it would time out forever.
        hub.kill()
        hub = shared.acquire(registry, start_hub)
    try:
        thin = backend.start(_thin_spec(spec, hub.address, secrets), name=name)
    except BaseException:
        hub.stop()
        raise
    return BatchedModel(thin, hub, in_container)
