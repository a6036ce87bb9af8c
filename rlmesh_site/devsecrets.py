"""Secrets of a development or demo installation: generated once into ``var/secrets.json`` and reused.

Production (``RLMESH_ENV=production``) never reads this file: its secrets come from the environment (or
``*_FILE`` paths), so every host of a deployment shares them. On one machine the web server, the workers and
every ``manage.py`` command share the file instead, so no fixed, published key signs anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path

#: Every secret a development installation generates; settings.py reads each with the environment first.
NAMES = (
    "SECRET_KEY",
    "API_KEY_PEPPER",
    "JWT_SIGNING_KEY",
    "RLMESH_REGISTRY_NOTIFY_SECRET",
    "RLMESH_REGISTRY_WORKER_SECRET",
)


def load_or_create(path: Path) -> dict[str, str]:
    """Return the secrets stored at ``path``, creating the file (mode 0600) on first use.

    Several processes may start at once (web server, worker, manage.py): the file is written under a temporary
    name and linked into place, so exactly one set of secrets wins and everyone reads that one. A name missing
    from an older file is derived from its ``SECRET_KEY`` (the same value in every process, nothing rewritten).
    """
    if not path.exists():
        _create(path, {name: secrets.token_urlsafe(50) for name in NAMES})
    stored = json.loads(path.read_text())
    for name in NAMES:
        if not stored.get(name):
            stored[name] = hashlib.sha256(f"{name}:{stored['SECRET_KEY']}".encode()).hexdigest()
    return stored


def _write_private(path: Path, values: dict[str, str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(values, fh, indent=2)
        fh.write("\n")


def _create(path: Path, values: dict[str, str]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    _write_private(tmp, values)
    try:
        os.link(tmp, path)  # atomic, and fails if another process got there first: theirs wins
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
