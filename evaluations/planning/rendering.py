"""What an env renders and holds for one model × task pair: cameras only for a model that reads images, privileged
state only for a model that reads it, and how many instances of a memory-heavy env run at once on a worker host.

An env opts in by declaring the make parameters (``cameras``: ``none``/``agentview``/``both``; ``privileged``: bool),
as the prebuilt LIBERO env does; a model says what it reads with the catalog's ``observes`` label (``state``,
``images``, ``privileged``), else its ``model_spec`` decides (image inputs → images), else (spec-less: it may read
anything) it gets every camera. Videos need no camera in the observation: such an env renders its video frames on
demand in ``render()``, only in the episodes that record; recorded steps likewise (``record_cameras``).
"""

from __future__ import annotations

import os

from django.conf import settings

from ..prebuilt.catalog import MEMORY_LABEL, OBSERVES_LABEL, declared_memory
from ..services.image_versions import ResolvedImage

__all__ = ["concurrency_cap", "memory_cap_warning", "model_reads", "observation_kwargs"]


def model_reads(model: ResolvedImage) -> set[str]:
    """What ``model`` reads of an observation: its ``observes`` label; else ``{"state", "images"}`` or
    ``{"state"}`` from its recorded ``model_spec`` (an ``image`` input or not); else (spec-less) ``{"state",
    "images"}``."""
    version = model.version
    label = (version.labels or {}).get(OBSERVES_LABEL)
    if label:
        return {part.strip() for part in label.split(",") if part.strip()}
    spec = (version.describe or {}).get("model_spec")
    if isinstance(spec, dict) and "error" not in spec:
        inputs = spec.get("input")
        leaves = inputs.values() if isinstance(inputs, dict) and not inputs.get("type") else [inputs]
        if not any(isinstance(leaf, dict) and leaf.get("type") == "image" for leaf in leaves):
            return {"state"}
    return {"state", "images"}


def observation_kwargs(model: ResolvedImage, declared: dict, params: dict, *, record_steps: bool = False) -> dict:
    """Make kwargs the planner adds for ``model`` on an env whose declared make parameters are ``declared``:
    ``cameras`` (``both`` for a model that reads images, else ``none``), ``record_cameras`` (``both`` for a task
    that keeps its steps for a dataset while its model reads no images: rendered beside the observation, so the
    model sees, and the digest hashes, what it would unrecorded; an env without that parameter gets ``cameras``
    instead) and ``privileged`` (True for a model that reads it). A value the task's own ``params`` set is kept."""
    reads = model_reads(model)
    kwargs: dict = {}
    beside = record_steps and "images" not in reads and "record_cameras" in declared
    if "cameras" in declared and "cameras" not in params:
        kwargs["cameras"] = "both" if "images" in reads or (record_steps and not beside) else "none"
    if beside and "record_cameras" not in params and kwargs.get("cameras", params.get("cameras")) != "both":
        kwargs["record_cameras"] = "both"
    if "privileged" in declared and "privileged" not in params and "privileged" in reads:
        kwargs["privileged"] = True
    return kwargs


def host_memory_bytes() -> int:
    """A worker host's memory: setting ``RLMESH_WORKER_HOST_MEMORY_BYTES`` (env var of the same name), else this
    host's physical memory (workers and the web server usually share a host kind)."""
    configured = getattr(settings, "RLMESH_WORKER_HOST_MEMORY_BYTES", None) or os.environ.get("RLMESH_WORKER_HOST_MEMORY_BYTES")
    return int(configured) if configured else os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def memory_fraction() -> float:
    """The share of a worker host's memory envs that declare theirs may take at once (``RLMESH_ENV_MEMORY_FRACTION``,
    setting or env var; 0.75)."""
    return float(getattr(settings, "RLMESH_ENV_MEMORY_FRACTION", None) or os.environ.get("RLMESH_ENV_MEMORY_FRACTION") or 0.75)


def concurrency_cap(env: ResolvedImage) -> int | None:
    """How many instances of ``env`` may run at once on one worker host: ``RLMESH_ENV_MEMORY_FRACTION`` ×
    ``RLMESH_WORKER_HOST_MEMORY_BYTES`` ÷ the env's declared memory (``MEMORY_LABEL``), at least 1; None when the env
    declares no memory."""
    per_env = declared_memory(env.version)
    if not per_env:
        return None
    budget = memory_fraction() * host_memory_bytes()
    return max(1, int(budget // per_env))


def memory_cap_warning(path: str, env: ResolvedImage, workers: int, cap: int) -> str:
    """The preview's warning when a task asks for more parallel workers than ``cap``."""
    per_env = int(env.version.labels[MEMORY_LABEL]) / 2**30
    host = host_memory_bytes() / 2**30
    return (f"{path}.workers: {workers} {env.reference} envs at once would hold ~{workers * per_env:.1f} GB "
            f"({per_env:.1f} GB each); capped at {cap} concurrent envs per worker host "
            f"({memory_fraction():.0%} of its {host:.1f} GB)")
