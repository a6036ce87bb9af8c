"""What the runtime knows about processes of this host from their pid: whether one exists, and when it started (which
tells a reused pid apart from the process that had it)."""

from __future__ import annotations

import os

__all__ = ["pid_alive", "start_time"]


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (one of another user counts as existing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None
