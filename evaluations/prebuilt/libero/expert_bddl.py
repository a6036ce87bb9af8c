"""The BDDL goal text and its destinations, as ``prebuilt/libero-expert``'s pick and place reads them
(:mod:`evaluations.prebuilt.libero.expert_place`, :mod:`evaluations.prebuilt.libero.expert_multi`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .expert_motion import vec as _vec


def _text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.item() if value.shape == () else value.tolist()
    if isinstance(value, (list, tuple)):
        value = value[0] if value else ""
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_goal(text: str) -> list[list[str]]:
    """``"on a b; in c d"`` → ``[["on", "a", "b"], ["in", "c", "d"]]`` (the privileged ``goal`` text)."""
    return [part.split() for part in str(text).split(";") if part.strip()]


def _container_aabb(priv: dict, target: str) -> np.ndarray | None:
    """The bounding box of the object a destination region belongs to (``basket_1_contain_region`` →
    ``basket_1_aabb``), or ``None`` (a fixture's region: fixtures have no bounding box)."""
    parts = target.split("_")
    for cut in range(len(parts), 0, -1):
        key = "_".join(parts[:cut]) + "_aabb"
        if key in priv:
            return _vec(priv, key)
    return None
