# Shared by the setup scripts of the env families that need a venv of their own (scripts/setup-metaworld.sh,
# setup-libero.sh, setup-lerobot.sh): each pins its own MuJoCo or torch, so each lives apart from .venv.
# Source it after setting NAME (the log prefix), VENV (the folder) and PACKAGES (the exact pins); then:
#   venv_up_to_date && exit 0    # the stamp records the pinned set: a second run is instant
#   venv_install                 # Python 3.11 venv (python3-venv from apt as root if needed) + pip install PACKAGES
#   <smoke check>; venv_egl      # the family's import check; Mesa EGL for MUJOCO_GL=egl (as root)
#   venv_stamp
STAMP="$VENV/.installed"
# The installs of `make test` run side by side (Makefile): apt calls take turns on one lock, and wait for any other
# apt (unattended upgrades on a fresh machine) instead of failing on its lock.
APT=(flock /tmp/rlmesh-apt.lock apt-get -o DPkg::Lock::Timeout=600)
WANT="${PACKAGES[*]}"
_venv_start=$(date +%s.%N)

elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$_venv_start" "$(date +%s.%N)"; }

# True when the stamp records exactly this pinned set, or when the venv already holds exactly these versions (one
# installed by hand, or shared): then it only gets its stamp, since reinstalling would learn nothing new.
venv_up_to_date() {
    if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$VENV/bin/python" ]; then
        echo "$NAME: $VENV is up to date ($(elapsed) s)"
        return 0
    fi
    if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "${PACKAGES[@]}" <<'PY' 2>/dev/null; then
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
        echo "$WANT" > "$STAMP"
        echo "$NAME: $VENV already holds the pinned set; stamped ($(elapsed) s)"
        return 0
    fi
    return 1
}

venv_install() {
    # Python 3.11, as the main venv (Debian 12's python3 is 3.11).
    local py="" cand
    for cand in python3.11 python3; do
        if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
            py="$cand"
            break
        fi
    done
    if [ -z "$py" ]; then
        echo "$NAME: python 3.11 not found" >&2
        exit 1
    fi
    if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
        rm -rf "$VENV"
        if ! "$py" -m venv "$VENV"; then
            # Debian's own python3 needs python3-venv (ensurepip) to create a venv.
            if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
                export DEBIAN_FRONTEND=noninteractive
                "${APT[@]}" update -q && "${APT[@]}" install -y -q python3-venv
            fi
            rm -rf "$VENV"
            "$py" -m venv "$VENV"
        fi
    fi
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PACKAGES[@]}"
}

# Offscreen rendering (MUJOCO_GL=egl) needs Mesa's EGL/GL libraries on a bare Debian image.
venv_egl() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
        local missing=() pkg
        for pkg in libegl1 libegl-mesa0 libgl1-mesa-dri libgbm1 libgl1; do
            dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
        done
        if [ ${#missing[@]} -gt 0 ]; then
            export DEBIAN_FRONTEND=noninteractive
            "${APT[@]}" update -q && "${APT[@]}" install -y -q "${missing[@]}"
        fi
    fi
}

venv_stamp() {
    echo "$WANT" > "$STAMP"
    echo "$NAME: installed into $VENV in $(elapsed) s"
}
