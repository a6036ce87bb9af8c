#!/usr/bin/env bash
# Create the Meta-World venv (.venv-metaworld) used by the prebuilt env/model in
# evaluations/prebuilt/metaworld/factory.py.
#
# It is separate from the main .venv because metaworld pins mujoco==3.3.0 and its own gymnasium
# stack; installing it over another MuJoCo in place breaks `import mujoco` (spec/ENVS.md §2), so each
# env family keeps its own environment. Idempotent: a stamp file records the pinned set, so a second run is instant.
#
# Usage: bash scripts/setup-metaworld.sh        (env: MW_VENV=<dir> to use another location)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${MW_VENV:-$PWD/.venv-metaworld}"
PACKAGES=(
    "rlmesh[gymnasium,numpy]==0.1.0"
    "gymnasium==1.4.0"
    "numpy==2.4.6"
    "metaworld==3.1.1"   # pulls mujoco==3.3.0 (and scipy)
    "packaging==26.3"    # gymnasium.envs.mujoco imports it, but neither metaworld nor gymnasium declares it
)
NAME=setup-metaworld
# shellcheck source=scripts/venv-lib.sh
source scripts/venv-lib.sh

venv_up_to_date && exit 0
venv_install
# Smoke check: the pinned mujoco imports and metaworld registers its envs.
"$VENV/bin/python" -c 'from importlib.metadata import version as v; import mujoco, metaworld, rlmesh; print("setup-metaworld:", *(f"{p} {v(p)}" for p in ("metaworld", "mujoco", "gymnasium", "rlmesh")))'
venv_egl
venv_stamp
