"""The tiny SmolVLA checkpoint of the tests, and running code in ``.venv-lerobot`` (lerobot, torch) from the main venv.

:func:`build_tiny_checkpoint` runs ``tests/fixtures/build_tiny_smolvla.py`` (lerobot's and transformers' own classes,
offline) and returns the policy and backbone folders, laid out as an operator installs the real ones.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.support.live import ROOT

__all__ = ["LEROBOT_INSTALLED", "LEROBOT_PYTHON", "build_tiny_checkpoint", "lerobot_env", "run_in_lerobot"]

LEROBOT_PYTHON = ROOT / ".venv-lerobot" / "bin" / "python"
#: The venv is installed once its install stamp is there (scripts/venv-lib.sh writes it last), as the platform checks.
LEROBOT_INSTALLED = (ROOT / ".venv-lerobot" / ".installed").is_file() and LEROBOT_PYTHON.exists()
#: What keeps huggingface_hub and transformers off the network in every process the tests start.
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def lerobot_env(**extra: str) -> dict:
    """The environment of a ``.venv-lerobot`` process: the repository importable, Hugging Face offline."""
    return {**os.environ, "PYTHONPATH": str(ROOT), **OFFLINE, **extra}


def build_tiny_checkpoint(folder: Path) -> tuple[Path, Path]:
    """``(policy folder, backbone folder)`` of a tiny random SmolVLA LIBERO checkpoint built under ``folder``."""
    out = subprocess.run([str(LEROBOT_PYTHON), str(ROOT / "tests" / "fixtures" / "build_tiny_smolvla.py"), str(folder)],
                         capture_output=True, text=True, timeout=300, env=lerobot_env(), cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    built = json.loads(out.stdout.strip().splitlines()[-1])
    return Path(built["policy"]), Path(built["backbone"])


def run_in_lerobot(code: str, *args: str, timeout: float = 300) -> dict:
    """Run ``code`` in ``.venv-lerobot`` with ``args`` as ``sys.argv[1:]``; return the JSON object its last stdout
    line prints."""
    out = subprocess.run([str(LEROBOT_PYTHON), "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                         env=lerobot_env(), cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
