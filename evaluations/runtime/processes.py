"""What the runtime knows about processes of this host from their pid: whether one exists, and when it started (which
tells a reused pid apart from the process that had it)."""

from __future__ import annotations

import os

__all__ = ["pid_alive", "start_time"]


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (field 3, the state, first), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _dead(fields: list[str] | None) -> bool:
    # A zombie (Z) or dying (X) process has exited: it holds nothing and serves nothing; only its parent's wait()
    # is missing. A server whose parent is alive stays a zombie until then, and must not look alive meanwhile.
    return fields is None or fields[0] in ("Z", "X")


def pid_alive(pid: int) -> bool:
    """Whether a live process with this pid exists on this host (one of another user counts; a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not _dead(_stat(pid)) if os.path.exists("/proc/self/stat") else True


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None if it is gone
    (or a zombie)."""
    fields = _stat(pid)
    if _dead(fields):
        return None
    try:
        return int(fields[19])
    except (ValueError, IndexError):
        return None
