"""Files and folders that hold every organization's data, made (or narrowed to) the service user's own at start."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["private_folder", "private_sqlite_file"]


def private_sqlite_file(name: str) -> None:
    """Create (or narrow) an SQLite database file as owner-only (0600): it holds every organization's data, and
    SQLite gives its -wal/-shm files the database file's mode."""
    path = Path(name)
    if name in ("", ":memory:") or name.startswith("file:"):
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
    except OSError:
        pass  # another user's file or a read-only checkout: SQLite reports what matters when it opens it


def private_folder(path: Path, mode: int) -> None:
    """Create ``path`` (MEDIA_ROOT) with ``mode`` (FILE_UPLOAD_DIRECTORY_PERMISSIONS), or narrow an existing one to it,
    keeping a set-group-id bit the operator set so new folders take its group: files stored under a 0755 root by an
    earlier version become unreachable to other users at once."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        current = path.stat().st_mode
        if current & 0o777 != mode:
            path.chmod(mode | (current & stat.S_ISGID))
    except OSError:
        pass  # another user's folder or a read-only mount: the storage reports what matters when it writes
