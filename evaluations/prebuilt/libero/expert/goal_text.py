"""The BDDL goal as the privileged observation carries it (its ``goal`` text), parsed for
``prebuilt/libero-expert``: ``"on a b; in c d"`` → ``[["on", "a", "b"], ["in", "c", "d"]]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def as_text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.item() if value.shape == () else value.tolist()
    if isinstance(value, (list, tuple)):
        value = value[0] if value else ""
    return value.decode() if isinstance(value, bytes) else str(value)

def parse_goal(text: str) -> list[list[str]]:
    """``"on a b; in c d"`` → ``[["on", "a", "b"], ["in", "c", "d"]]`` (the privileged ``goal`` text)."""
    return [part.split() for part in str(text).split(";") if part.strip()]
