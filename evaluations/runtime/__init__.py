"""Runtime backends: how env and model servers are started for a shard.

``get_backend()`` imports the dotted path in ``settings.RLMESH_RUNTIME`` once and caches the instance.
"""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string

from .base import RuntimeBackend, RuntimeBackendError, ServedEndpoint, ServerSpec

__all__ = ["RuntimeBackend", "RuntimeBackendError", "ServedEndpoint", "ServerSpec", "get_backend"]


@cache
def get_backend() -> RuntimeBackend:
    """The configured runtime backend (a singleton per process)."""
    return import_string(settings.RLMESH_RUNTIME)()
