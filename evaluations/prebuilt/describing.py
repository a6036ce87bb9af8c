"""Describe envelopes of the prebuilt sources, and a cache of them on disk.

Describing a source builds its env once (``rlmesh.describe`` reads the spaces of a constructed env): 20 s for
LIBERO, whose scene is compiled, and ~25 s for the whole catalog on 2 cores, paid at every ``migrate`` of a fresh
database. An envelope depends only on the source, the code of ``evaluations/prebuilt/`` and the packages of the
interpreter that builds it, so it is cached under ``RLMESH_DESCRIBE_CACHE_DIR`` keyed by a SHA-256 of exactly those;
a change to any of them describes again.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["describe_source", "describe_key"]

PREBUILT_DIR = Path(__file__).resolve().parent
ROOT = PREBUILT_DIR.parents[1]


def describe_source(source: str) -> dict:
    """The describe envelope (``rlmesh.describe``, schema_version 1) of a trusted ``python://module:Class`` source
    (built in this process) or ``python+<venv>://`` source (built by that venv's interpreter); ``{}`` for other
    sources or when describing fails: the envelope then only lacks what the compatibility check reads. A non-empty
    envelope is read from and written to the cache (:func:`describe_key`)."""
    from ..runtime.base import RuntimeBackendError
    from ..runtime.local import interpreter_for

    try:
        python, target = interpreter_for(source)
    except RuntimeBackendError:
        return {}
    path = _cache_path(describe_key(source, python))
    if path is not None:
        with contextlib.suppress(OSError, ValueError):
            cached = json.loads(path.read_text())
            if isinstance(cached, dict) and cached:
                return cached
    envelope = _describe(python, target)
    if envelope and path is not None:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
                json.dump(envelope, f)
            os.replace(f.name, path)
    return envelope


def describe_key(source: str, python: str) -> str:
    """SHA-256 (hex) of what an envelope depends on: ``source``, the interpreter's path, the names of the
    distributions installed beside it (``*.dist-info``: every package and its version) and the bytes of every module
    under ``evaluations/prebuilt/``. Raises nothing; an unreadable part hashes as absent."""
    h = hashlib.sha256()
    h.update(f"{source}\0{python}\0".encode())
    site = Path(python).parent.parent / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    if python == sys.executable:
        site = Path(next((p for p in sys.path if p.endswith("site-packages")), str(site)))
    with contextlib.suppress(OSError):
        h.update("\n".join(sorted(p.name for p in site.glob("*.dist-info"))).encode())
    for module in sorted(PREBUILT_DIR.rglob("*.py")):
        h.update(str(module.relative_to(PREBUILT_DIR)).encode() + b"\0")
        with contextlib.suppress(OSError):
            h.update(module.read_bytes())
    return h.hexdigest()


def _cache_path(key: str) -> Path | None:
    from django.conf import settings

    folder = getattr(settings, "RLMESH_DESCRIBE_CACHE_DIR", None)
    return Path(folder) / f"{key}.json" if folder else None


def _describe(python: str, target: str) -> dict:
    import subprocess

    try:
        if python == sys.executable:
            from rlmesh._describe import describe

            # Describing builds the env once; what its libraries print then (gymnasium-robotics' Adroit notice,
            # PyOpenGL's accelerate note) is not the caller's business: migrate and make demo stay quiet.
            with _quiet():
                return json.loads(json.dumps(describe(target)))
        code = "import json, sys; from rlmesh._describe import describe; print(json.dumps(describe(sys.argv[1])))"
        out = subprocess.run([python, "-c", code, target], capture_output=True, text=True, timeout=120,
                             cwd=ROOT, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    except Exception:  # noqa: BLE001 - an envelope is optional metadata, never a reason to refuse the catalog
        return {}


@contextlib.contextmanager
def _quiet():
    """Python-level stdout, stderr, warnings and INFO logging silenced for the duration."""
    import logging
    import warnings

    previous = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)
