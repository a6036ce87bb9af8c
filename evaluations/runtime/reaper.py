"""Runtime housekeeping the periodic reaper runs: remove this deployment's containers that no running shard or probe
owns (a worker killed mid-shard cannot remove its own)."""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from ..choices import ProbeStatus, ShardStatus
from ..models import ImageVersion, Shard
from .processes import pid_alive

__all__ = ["live_server_names", "reap_containers", "reap_socket_dirs"]

logger = logging.getLogger(__name__)


def live_server_names() -> set[str]:
    """Names of every server a running shard or a running probe may own right now."""
    live = set()
    for shard in Shard.objects.filter(status=ShardStatus.RUNNING).select_related("evaluation", "workload"):
        # A batched image's inference process is the evaluation's, shared by its shards on a host (runtime.inference).
        live |= {shard.server_name("env"), shard.server_name("model"), f"{shard.evaluation.public_id}-inference"}
    probing = ImageVersion.objects.filter(probe_status=ProbeStatus.PROBING).values_list("pk", flat=True)
    return live | {f"probe-{pk}" for pk in probing}


def reap_containers() -> list[str]:
    """Remove platform containers whose shard or probe is no longer running; return their names ([] when no Docker
    API is configured or reachable: an unreachable engine must not break the periodic reaper).

    Shard containers are named after their shard (``Shard.server_name``), probe containers ``probe-<version id>``;
    anything else with this deployment's label is an orphan of a dead worker.
    """
    host = settings.RLMESH_DOCKER_HOST
    if host.startswith("unix://") and not Path(host.removeprefix("unix://")).exists():
        return []
    from .docker import reap_orphans

    try:
        return reap_orphans(live_server_names())
    except Exception:  # noqa: BLE001 - see the docstring
        logger.warning("container reaper could not reach the Docker API at %s", host)
        return []


_SOCKET_DIR = re.compile(r"^rlm-(?:c-)?(\d+)-")


def reap_socket_dirs(root: str | None = None) -> list[str]:
    """Remove this host's server socket directories (``rlm-<pid>-…`` of the local runtime, ``rlm-c-<pid>-…`` shared
    with env containers) whose worker process no longer exists — a killed worker cannot remove its own. Returns the
    paths removed. ``root`` defaults to the temp directory."""
    root = root or tempfile.gettempdir()
    removed = []
    for entry in os.scandir(root):
        match = _SOCKET_DIR.match(entry.name)
        if match and entry.is_dir(follow_symlinks=False) and not pid_alive(int(match[1])):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed
