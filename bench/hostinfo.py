"""What a benchmark's numbers, and an episode's bits, depend on beyond the code: the CPU (its vector instructions
change a floating-point sum's last bits: the same LIBERO episode succeeded on the 12-04 sweep's host and failed on
this one), the core count, and the versions of the numeric packages in the interpreter that ran the work.

``host(python)`` → ``{"cpu", "flags", "cores", "kernel", "packages": {name: version}, "python"}``; a package that does
not import is left out. Used by the benchmarks that write ``bench/results/``."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path

PACKAGES = ("numpy", "torch", "mujoco", "robosuite", "lerobot", "rlmesh", "gymnasium")
_PROBE = ("import importlib.metadata as m, json, sys\nout = {}\nfor name in sys.argv[1:]:\n    try:\n"
          "        out[name] = m.version(name)\n    except Exception:\n        pass\nprint(json.dumps(out))")


def _cpuinfo() -> dict[str, str]:
    """``/proc/cpuinfo``'s fields of (the last) processor; {} where there is none."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return {}
    return {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in lines if ":" in line)}


def host(python: str) -> dict:
    """The host and ``python``'s numeric packages (the module docstring); ``vector``: the CPU's SIMD flags."""
    info = _cpuinfo()
    flags = sorted(set(info.get("flags", "").split()))
    out = subprocess.run([python, "-c", _PROBE, *PACKAGES], capture_output=True, text=True, timeout=120)
    try:
        packages = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        packages = {}
    return {"cpu": info.get("model name", platform.processor()), "cores": os.cpu_count(),
            "flagsSha256": hashlib.sha256(" ".join(flags).encode()).hexdigest()[:16],
            "vector": [f for f in flags if f.startswith(("avx", "fma", "sse4"))],
            "kernel": platform.release(), "python": python, "packages": packages}
