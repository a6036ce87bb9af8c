#!/usr/bin/env bash
# Create the LeRobot venv (.venv-lerobot) that serves prebuilt/smolvla/libero (evaluations/prebuilt/smolvla.py).
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
STAMP="$VENV/.installed"
WANT="${PACKAGES[*]}"
start=$(date +%s.%N)

elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)"; }

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$VENV/bin/python" ]; then
    echo "setup-lerobot: $VENV is up to date ($(elapsed) s)"
    exit 0
fi

# An existing venv that already holds exactly these versions (e.g. one installed by hand, or shared) only gets its
# stamp: reinstalling 8 GB to learn nothing new is what the stamp is for.
installed() {
    "$VENV/bin/python" - "${PACKAGES[@]}" <<'PY' 2>/dev/null
import re, sys
from importlib.metadata import PackageNotFoundError, version
for spec in sys.argv[1:]:
    name, want = re.sub(r"\[.*\]", "", spec).split("==")
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
}

if [ -x "$VENV/bin/python" ] && installed; then
    echo "$WANT" > "$STAMP"
    echo "setup-lerobot: $VENV already holds the pinned set; stamped ($(elapsed) s)"
    exit 0
fi

# Python 3.11, as the main venv (Debian 12's python3 is 3.11; lerobot 0.5+ needs 3.12).
PY=""
for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
        PY="$cand"
        break
    fi
done
if [ -z "$PY" ]; then
    echo "setup-lerobot: python 3.11 not found" >&2
    exit 1
fi

if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$VENV"
    if ! "$PY" -m venv "$VENV"; then
        # Debian's own python3 needs python3-venv (ensurepip) to create a venv.
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -q && apt-get install -y -q python3-venv
        fi
        rm -rf "$VENV"
        "$PY" -m venv "$VENV"
    fi
fi

"$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PACKAGES[@]}"
# Smoke check: SmolVLA's policy class and rlmesh import.
"$VENV/bin/python" -c 'from importlib.metadata import version as v; import rlmesh; from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy; print("setup-lerobot:", *(f"{p} {v(p)}" for p in ("lerobot", "torch", "transformers", "rlmesh")))'

echo "$WANT" > "$STAMP"
echo "setup-lerobot: installed into $VENV in $(elapsed) s"
