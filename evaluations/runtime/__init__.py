"""Runtime backends: how env and model servers are started for a shard.

``get_backend()`` imports the dotted path in ``settings.RLMESH_RUNTIME`` once and caches the instance.

Importing the package imports no Django (the functions do, when called): env venvs without Django import its
Django-free modules (:mod:`.forkchild`, :mod:`.processes`), e.g. LIBERO's zygote.
"""

from __future__ import annotations

from functools import cache

from .base import RuntimeBackend, RuntimeBackendError, ServedEndpoint, ServerSpec

__all__ = ["RuntimeBackend", "RuntimeBackendError", "ServedEndpoint", "ServerSpec", "backend_for", "get_backend"]


@cache
def get_backend() -> RuntimeBackend:
    """The configured runtime backend (a singleton per process)."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    return import_string(settings.RLMESH_RUNTIME)()


@cache
def _docker_backend() -> RuntimeBackend:
    from .docker import DockerRuntime

    return DockerRuntime()


def backend_for(source: str) -> RuntimeBackend:
    """The runtime for a source (DESIGN §3): pushed images (``oci://``) run in containers; trusted
    ``python://`` sources on the configured backend (``local`` by default)."""
    if source.startswith("oci://"):
        return _docker_backend()
    return get_backend()
