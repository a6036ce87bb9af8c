"""Running code in the LIBERO venv from a test (the main venv has no simulator): its interpreter, a skip marker for a
checkout without it, and :func:`run_in_libero`."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBERO_PYTHON = ROOT / ".venv-libero" / "bin" / "python"
needs_libero_venv = pytest.mark.skipif(
    not LIBERO_PYTHON.exists(), reason=f"{LIBERO_PYTHON} does not exist: run `bash scripts/setup-libero.sh`")

__all__ = ["LIBERO_PYTHON", "needs_libero_venv", "run_in_libero", "run_json_in_libero"]


def run_in_libero(code: str, timeout: float = 300) -> str:
    """Run ``code`` (dedented) in ``.venv-libero``'s Python from the checkout, MuJoCo on EGL and a fresh ``HOME``;
    its stdout. AssertionError with the end of its stderr when it fails."""
    env = dict(os.environ, MUJOCO_GL="egl", PYTHONPATH=str(ROOT), RLMESH_WORKFLOW_EDITION="2026.06")
    env["HOME"] = tempfile.mkdtemp(prefix="libero-home-")
    proc = subprocess.run([str(LIBERO_PYTHON), "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def run_json_in_libero(code: str, timeout: float = 300) -> dict:
    """Run ``code`` (dedented) in ``.venv-libero``'s Python from the checkout, with this process's environment; its
    last stdout line, parsed as JSON."""
    env = {**os.environ, "RLMESH_WORKFLOW_EDITION": "2026.06", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([str(LIBERO_PYTHON), "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"libero venv script failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])
