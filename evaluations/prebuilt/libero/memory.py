"""What one LIBERO env holds in memory, and what it gives back (issue 26). Runs in the LIBERO venv.

Measured on ``libero_object/0`` (``bench/bench_libero.py``): the imports (LIBERO, robosuite, MuJoCo, numba, cv2,
matplotlib; no torch) are ~0.16 GB; building the scene leaves ~1.7 GB more:

- the compiled ``MjModel``, 0.24 GB (0.14 GB of it the textures, ``tex_data``), which the env needs;
- MuJoCo's **asset cache**: decoded textures and meshes the compiler keeps for the next compile of the same files
  (0.3 GB, capacity 500 MB): of no use once the scene is compiled (a soft reset never compiles again);
- heap the XML assembly and the compiles freed but glibc did not return (0.3 GB);
- the **offscreen render context**, 0.44 GB and ~1.2 s: MuJoCo uploads every texture and mesh into it, and with
  EGL on Mesa's software renderer (llvmpipe, these hosts) that upload is host memory. An env without camera
  observations reads it only to record a video.

:func:`release_build_memory` gives back the cache and the freed heap once the env is built, and an env without
cameras opens its render context at its first ``render()`` (:func:`open_render_context`), so an env that records
no video never pays for it. ``RLMESH_LIBERO_LEAN=0`` turns these off, with the describe shortcut
(``libero_describe``) and the zygote (``libero_zygote``): the code path before issue 26, kept for
``bench/bench_libero.py``'s BEFORE column.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["LEAN_ENV", "lean", "open_render_context", "release_build_memory", "resident"]

#: Environment variable: ``0``/``false``/``no`` keeps the asset cache and the eager render context (before issue 26).
LEAN_ENV = "RLMESH_LIBERO_LEAN"


def lean() -> bool:
    """Whether LIBERO envs of this process release their build memory and open a render context only when they
    render (``RLMESH_LIBERO_LEAN``, default on)."""
    return os.environ.get(LEAN_ENV, "1").strip().lower() not in ("0", "false", "no")


def release_build_memory() -> None:
    """Empty MuJoCo's asset cache and return the heap freed by the build to the OS (``malloc_trim``). Changes no
    simulator state: a later compile (a hard reset's rebuild) decodes its assets again."""
    import mujoco

    mujoco.mj_clearCache(mujoco.mj_getCache())
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the freed heap stays mapped, nothing else changes
        pass


def open_render_context(env) -> None:
    """Give ``env`` (a robosuite env built without an offscreen renderer) the render context robosuite's
    ``_reset_internal`` makes for an env that has one: an offscreen context with the visual meshes shown and the
    collision meshes hidden. No-op when it has one."""
    from robosuite.utils.binding_utils import MjRenderContextOffscreen

    if env.sim._render_context_offscreen is None:
        # Its constructor runs sim.forward() ("so that there is something to render"): harmless at construction,
        # where robosuite makes it, but here, after a step, it would move the bodies to the integrated state before
        # the frame an eager context renders without it. Skipped: the frames are the eager context's.
        env.sim.forward = _no_forward
        try:
            MjRenderContextOffscreen(env.sim, device_id=env.render_gpu_device_id)  # registers itself with the sim
        finally:
            del env.sim.forward  # the class's method again
    context = env.sim._render_context_offscreen
    context.vopt.geomgroup[0] = 1 if env.render_collision_mesh else 0
    context.vopt.geomgroup[1] = 1 if env.render_visual_mesh else 0


def _no_forward() -> None:
    pass


def resident(pid: int | str = "self") -> dict[str, int]:
    """Memory of process ``pid`` in bytes (``/proc/<pid>/smaps_rollup``): ``rss`` (resident), ``pss`` (shared pages
    split between the processes sharing them), ``uss`` (pages only this process maps: private clean + dirty).
    OSError when the process is gone."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                fields[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return {"rss": fields.get("Rss", 0), "pss": fields.get("Pss", 0),
            "uss": fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)}
