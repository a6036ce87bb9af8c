#!/usr/bin/env bash
# Create the LeRobot venv (.venv-lerobot) that serves prebuilt/smolvla/libero (evaluations/prebuilt/lerobot/smolvla.py).
#
# It is separate from the main .venv and from .venv-libero: lerobot 0.4.4 (the newest for Python 3.11) pins
# torch<2.11 and its own transformers, and the model runs as its own rlmesh process anyway (spec/LIBERO.md).
# ~8.4 GB (torch's CUDA build from PyPI) and ~5 minutes to install. Idempotent: a stamp file records the pinned
# set, so a second run (or a run against an already-installed venv holding these versions) is instant.
#
# Usage: bash scripts/setup-lerobot.sh        (env: LEROBOT_VENV=<dir> to use another location)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${LEROBOT_VENV:-$PWD/.venv-lerobot}"
PACKAGES=(
    "lerobot[smolvla]==0.4.4"
    "torch==2.10.0"
    "torchvision==0.25.0"
    "transformers==4.57.6"
    "tokenizers==0.22.2"
    "huggingface-hub==0.35.3"
    "safetensors==0.8.0"
    "accelerate==1.15.0"
    "numpy==2.2.6"
    "rlmesh[numpy]==0.1.0"
)
NAME=setup-lerobot
# shellcheck source=scripts/venv-lib.sh
source scripts/venv-lib.sh

venv_up_to_date && exit 0
venv_install
# Smoke check: SmolVLA's policy class and rlmesh import.
"$VENV/bin/python" -c 'from importlib.metadata import version as v; import rlmesh; from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy; print("setup-lerobot:", *(f"{p} {v(p)}" for p in ("lerobot", "torch", "transformers", "rlmesh")))'
venv_stamp
