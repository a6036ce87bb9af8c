#!/usr/bin/env bash
# Create the Meta-World venv (.venv-metaworld) used by the prebuilt env/model in
# evaluations/prebuilt/metaworld.py.
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
STAMP="$VENV/.installed"
WANT="${PACKAGES[*]}"
start=$(date +%s.%N)

elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)"; }

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$VENV/bin/python" ]; then
    echo "setup-metaworld: $VENV is up to date ($(elapsed) s)"
    exit 0
fi

# Python 3.11, as the main venv (Debian 12's python3 is 3.11).
PY=""
for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
        PY="$cand"
        break
    fi
done
if [ -z "$PY" ]; then
    echo "setup-metaworld: python 3.11 not found" >&2
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
# Smoke check: the pinned mujoco imports and metaworld registers its envs.
"$VENV/bin/python" -c 'from importlib.metadata import version as v; import mujoco, metaworld, rlmesh; print("setup-metaworld:", *(f"{p} {v(p)}" for p in ("metaworld", "mujoco", "gymnasium", "rlmesh")))'

# Offscreen rendering (MUJOCO_GL=egl) needs Mesa's EGL/GL libraries on a bare Debian image.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
    missing=()
    for pkg in libegl1 libegl-mesa0 libgl1-mesa-dri libgbm1 libgl1; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q && apt-get install -y -q "${missing[@]}"
    fi
fi

echo "$WANT" > "$STAMP"
echo "setup-metaworld: installed into $VENV in $(elapsed) s"
