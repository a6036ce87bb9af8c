"""Where a bowl stands on an articulated fixture, for ``prebuilt/libero-expert``
(:mod:`evaluations.prebuilt.libero.expert.place`): on its top (``libero_spatial/9``: the bowl on the wooden cabinet)
or, lower down, in one of its drawers (``libero_spatial/4``).

A bowl on the cabinet's top is not in a drawer: its origin is 1 mm under the top panel's site, a bowl in the top
drawer's 6 cm under it. It stands on the top when it is over the top panel (inside the panel site's half-extents,
``<site>_size``, in the site's frame): a bowl lifted out of an open drawer is as high, but over the drawer.
A bowl held in a drawer whose rim is still under the top panel's edge is first moved out along the slide
(:func:`out_from_under`): lifted straight up, it caught under the panel and pivoted out of the fingers.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from .motion import vec


#: A bowl whose origin is less than this (m) below an articulated fixture's top, over the top, stands on the fixture
#: (a bowl on the cabinet's top, its origin 1 mm under the top panel's), not in one of its drawers (the top
#: drawer's bowl: 6 cm under it).
ON_TOP_BELOW = 0.03


def _top_site(priv: dict, name: str) -> tuple[float, str] | None:
    """``(height (m), key prefix)`` of the highest body or site origin of the articulated fixture ``name`` (or of
    the fixture a drawer region ``name`` belongs to: the one with ``_anchor``), a cabinet's top panel; ``None``
    when none is more than 0.1 m above the fixture's origin (no top known: a flat stove)."""
    parts = name.split("_")
    roots = ["_".join(parts[:cut]) for cut in range(len(parts), 0, -1)]
    root = next((r for r in roots if f"{r}_anchor" in priv), name)
    sites = [(float(vec(priv, k)[2]), k[: -len("_pos")]) for k in priv
             if k.startswith(root) and k.endswith("_pos") and f"{k[: -len('_pos')]}_quat" in priv]
    if not sites or f"{root}_pos" not in priv:
        return None
    top = max(sites)
    return top if top[0] > float(vec(priv, f"{root}_pos")[2]) + 0.1 else None


def _over(priv: dict, site: str, xy: np.ndarray) -> bool:
    """``xy`` (m) lies over the site's footprint: within its half-extents (``<site>_size``) in its own frame; true
    when the site has no size."""
    if f"{site}_size" not in priv:
        return True
    rel = Rotation.from_quat(vec(priv, f"{site}_quat")).inv().apply([*(xy - vec(priv, f"{site}_pos")[:2]), 0.0])
    return bool(np.all(np.abs(rel[:2]) <= vec(priv, f"{site}_size")[:2]))


def on_top(priv: dict, obj: str) -> str | None:
    """The articulated fixture (one with ``_anchor``) whose top ``obj`` stands on, or ``None``: within 0.3 m of its
    origin in xy and more than 0.1 m above it, no more than :data:`ON_TOP_BELOW` below its top and over the top's
    footprint (a bowl on the cabinet; not one on the flat stove, nor one in a drawer or lifted out of one)."""
    pos = vec(priv, f"{obj}_pos")
    for key in sorted(priv):
        if not key.endswith("_anchor"):
            continue
        name = key[: -len("_anchor")]
        base, top = vec(priv, f"{name}_pos"), _top_site(priv, name)
        near = np.linalg.norm(pos[:2] - base[:2]) < 0.3 and pos[2] - base[2] > 0.1
        if near and top is not None and pos[2] >= top[0] - ON_TOP_BELOW and _over(priv, top[1], pos[:2]):
            return name
    return None


#: A bowl lifted out of a drawer first slides out along the drawer until its rim is this far (m) out from under the
#: edge of the cabinet's top panel.
UNDER_CLEAR = 0.015


def out_from_under(priv: dict, obj: str, target: str) -> np.ndarray | None:
    """xy shift (m, world) that brings the rim of ``obj``, held in a drawer, :data:`UNDER_CLEAR` out from under the
    edge of its cabinet's top panel, along the drawer's slide (``<fixture>_axis``); ``None`` when it is clear, has
    risen above the top, is in no drawer (beside the panel: its centre outside the panel's width across the slide),
    or when ``target`` belongs to that cabinet (a bowl going in).

    ``libero_spatial/4``: the bowl's far rim a few mm under the panel's edge, the bowl lifted straight up pivoted
    out of the fingers (init states 5, 7, 18, 37 failed, all among the 15 of 50 with the least room there)."""
    if f"{obj}_aabb" not in priv:
        return None
    pos, box = vec(priv, f"{obj}_pos"), vec(priv, f"{obj}_aabb")
    radius = 0.5 * float(max(box[3] - box[0], box[4] - box[1]))
    for key in sorted(priv):
        name = key[: -len("_axis")] if key.endswith("_axis") else None
        if name is None or f"{name}_pos" not in priv or target.startswith(name):
            continue
        base, top = vec(priv, f"{name}_pos"), _top_site(priv, name)
        if top is None or f"{top[1]}_size" not in priv or np.linalg.norm(pos[:2] - base[:2]) > 0.3:
            continue
        if pos[2] - base[2] < 0.1 or box[5] > top[0]:
            continue
        axis = np.array([*vec(priv, key)[:2], 0.0])
        axis /= max(float(np.linalg.norm(axis)), 1e-9)
        across = np.array([-axis[1], axis[0], 0.0])
        rot, half = Rotation.from_quat(vec(priv, f"{top[1]}_quat")), vec(priv, f"{top[1]}_size")[:2]
        reach = float(np.abs(rot.inv().apply(axis)[:2]) @ half)  # the panel's half-extent along the slide
        width = float(np.abs(rot.inv().apply(across)[:2]) @ half)  # and across it
        rel = pos[:2] - vec(priv, f"{top[1]}_pos")[:2]
        along = float(rel @ axis[:2])
        if abs(float(rel @ across[:2])) > width:  # beside the cabinet, not in front of it: in no drawer
            continue
        need = reach + radius + UNDER_CLEAR - abs(along)
        return np.sign(along) * need * axis[:2] if need > 0 else None
    return None
