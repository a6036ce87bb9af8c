"""``prebuilt/lerobot``'s catalog entry: one checkpoint per LeRobot checkpoint folder an operator installed, made when
the catalog is synced (``services.image_versions.sync_prebuilt``)."""

from __future__ import annotations

import re
from pathlib import Path

from ..catalog import PrebuiltImage
from .checkpoints import SETTING, inspect

__all__ = ["LEROBOT_DOCS", "LEROBOT_MODEL", "LEROBOT_SOURCE", "lerobot_image"]

#: LeRobot checkpoints an operator installs: one checkpoint of ``prebuilt/lerobot`` per folder under
#: ``RLMESH_LEROBOT_CHECKPOINTS`` whose name a reference can spell (``evaluations.prebuilt.lerobot.checkpoints``).
LEROBOT_MODEL = "prebuilt/lerobot"
LEROBOT_DOCS = "docs/running/lerobot-checkpoints.md"
#: The platform's LeRobot model server (``prebuilt/lerobot/<folder>`` and organizations' model cars).
LEROBOT_SOURCE = "python+lerobot://evaluations.prebuilt.lerobot.policy:LeRobotPolicy"
_CHECKPOINT_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")


def lerobot_image(root: str, env: dict) -> PrebuiltImage:
    """``prebuilt/lerobot`` with a checkpoint per folder under ``root`` (``RLMESH_LEROBOT_CHECKPOINTS``; none when
    unset): its ``load`` kwargs name the folder and the SHA-256 of its files (the model server refuses other files),
    ``lerobot`` holds what :func:`~evaluations.prebuilt.lerobot.checkpoints.inspect` read (type, features, whether it
    loads, what it needs), ``weights`` the setting that names the folder. ``env``: the hub folders' settings."""
    checkpoints = {}
    folder = Path(root) if root else None
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()) if folder and folder.is_dir() else []:
        if not _CHECKPOINT_NAME.match(sub.name):
            continue
        report = inspect(sub, env)
        checkpoints[sub.name] = {
            "load": {"folder": sub.name, **({"sha256": report["sha256"]} if report["sha256"] else {})},
            "lerobot": report, "scenarios": None,
            "weights": {"check": "lerobot-checkpoint", "settings": {"root": SETTING}, "docs": LEROBOT_DOCS}}
    return PrebuiltImage(
        name="lerobot", kind="model", source=LEROBOT_SOURCE,
        description="LeRobot checkpoints an operator installs (RLMESH_LEROBOT_CHECKPOINTS), any policy type lerobot "
        "0.4.4 builds, on LIBERO: prebuilt/lerobot/<folder>. Loaded as LeRobot loads them, from JSON and safetensors "
        "only; types that need files only a hub serves are refused until those are installed.",
        checkpoints=checkpoints, envs=("prebuilt/libero",), observes=("state", "images"), ready_seconds=300)
