"""The scene around an object, for ``prebuilt/libero-expert`` (:mod:`evaluations.prebuilt.libero.expert.place`):
the articulated fixtures (cabinets, stoves, the microwave), every other body as a disc the hand keeps clear of when
it chooses a bowl's rim, and how high a carried object must go to clear the fixtures near it. Positions are in the
world frame, in metres, as the ``privileged`` observation gives them.
Also the body a BDDL name belongs to, and a destination's container.
"""

from __future__ import annotations

import numpy as np

from .fixtures import open_handles
from .motion import vec


#: Articulated fixtures count as discs of this radius when choosing the free side of a bowl (m).
FIXTURE_RADIUS = 0.15
#: Handles of open drawers count as discs of this radius (m): a bowl just in front of an open drawer is gripped
#: on its far side (the near side's finger landed on the drawer's corner and pushed it half shut).
HANDLE_RADIUS = 0.06
#: A carried object clears the tops of articulated fixtures near it by this much (m).
FIXTURE_CLEARANCE = 0.06


def fixtures_of(priv: dict) -> list[str]:
    """Articulated fixtures (those with joint positions: cabinets, stoves)."""
    return [k[: -len("_qpos")] for k in priv if k.endswith("_qpos") and k != "gripper_qpos"]


def neighbours(priv: dict, obj: str, under: str | None = None, rigid: bool = False) -> list[tuple[np.ndarray, float]]:
    """``(position, radius)`` of every other body: objects as points, articulated fixtures as
    :data:`FIXTURE_RADIUS` discs (a cabinet's origin is far from its walls), open drawers' handles as
    :data:`HANDLE_RADIUS` discs; with ``rigid`` fixtures without joints (no ``_aabb``: a wine rack) as
    :data:`FIXTURE_RADIUS` discs too; not the fixture ``under`` (the one ``obj`` stands on: under it, not beside it)."""
    fixtures = set(fixtures_of(priv))
    names = sorted({k[: -len("_pos")] for k in priv if k.endswith("_pos") and k != "eef_pos"})  # not hash order
    out = []
    for name in names:
        if name in (obj, under) or f"{name}_quat" not in priv or "region" in name or name.endswith("_side"):
            continue
        if name.startswith("main_table") or name.startswith("floor") or name.startswith("kitchen_table"):
            continue
        big = name in fixtures or (rigid and f"{name}_aabb" not in priv)
        out.append((vec(priv, f"{name}_pos"), FIXTURE_RADIUS if big else 0.0))
    return out + [(handle, HANDLE_RADIUS) for handle in open_handles(priv)]


def clearance_height(priv: dict, obj: str) -> float:
    """Lowest safe carry height of ``obj``'s origin over nearby articulated fixtures (their sites' tops)."""
    pos, top = vec(priv, f"{obj}_pos"), -np.inf
    for fixture in fixtures_of(priv):
        if np.linalg.norm(vec(priv, f"{fixture}_pos")[:2] - pos[:2]) > 0.3:
            continue
        for key in priv:
            if key.startswith(fixture) and key.endswith("_pos") and f"{key[: -len('_pos')]}_quat" in priv:
                top = max(top, float(vec(priv, key)[2]))
    return top + FIXTURE_CLEARANCE


def body_of(priv: dict, name: str) -> str | None:
    """The pose key prefix for a BDDL name: the name itself, or the object a ``<obj>_<region>`` belongs to."""
    if f"{name}_pos" in priv:
        return name
    parts = name.split("_")
    for cut in range(len(parts) - 1, 0, -1):
        prefix = "_".join(parts[:cut])
        if f"{prefix}_pos" in priv:
            return prefix
    return None


def container_aabb(priv: dict, target: str) -> np.ndarray | None:
    """The bounding box of the object a destination region belongs to (``basket_1_contain_region`` →
    ``basket_1_aabb``), or ``None`` (a fixture's region: fixtures have no bounding box)."""
    parts = target.split("_")
    for cut in range(len(parts), 0, -1):
        key = "_".join(parts[:cut]) + "_aabb"
        if key in priv:
            return vec(priv, key)
    return None
