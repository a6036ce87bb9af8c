"""Checkpoints whose weights an operator installs (``prebuilt/smolvla/libero``): where the settings point, and
whether the folders hold the files.

A catalog checkpoint declares ``"weights": {"check": <name in CHECKS>, "settings": {<load kwarg>: <setting name>},
"docs": <page>}``. The settings' values become the model's ``load`` keyword arguments (so the effective config
records which folders ran); while the check finds a problem, planning refuses the model at ``models[i].model``
with the check's message, and the catalog lists the checkpoint as needing weights. Never a stand-in model.
"""

from __future__ import annotations

from django.conf import settings

from ..prebuilt.lerobot import checkpoints as lerobot_checkpoints
from ..prebuilt.lerobot import smolvla

__all__ = ["CHECKS", "hub_settings", "weights_kwargs", "weights_problem", "weights_status"]


def hub_settings() -> dict[str, str]:
    """The settings naming the folders of hub-only files LeRobot types need (``checkpoints.HUB_FOLDERS``): name →
    folder, ``""`` when unset; and whether the lerobot venv has the transformers π0 / π0.5 need
    (``checkpoints.PATCHED_SETTING``): what :func:`~evaluations.prebuilt.lerobot.checkpoints.inspect` reads."""
    env = {name: str(getattr(settings, name, "") or "") for needs in lerobot_checkpoints.HUB_FOLDERS.values()
           for name, _ in needs if name}
    return {**env, **lerobot_checkpoints.patched_transformers_env(_lerobot_site_packages())}


def _lerobot_site_packages() -> str:
    """The lerobot venv's site-packages (``RLMESH_PYTHON_ENVS["lerobot"]``'s), "" when it is not installed."""
    from pathlib import Path

    python = Path(settings.RLMESH_PYTHON_ENVS.get("lerobot", ""))
    found = sorted(python.parent.parent.glob("lib/python3*/site-packages")) if python.name else []
    return str(found[0]) if found else ""


def _lerobot_problem(root: str = "", folder: str = "", sha256: str = "") -> str | None:
    """Why the LeRobot checkpoint ``root/folder`` cannot run here now (naming the setting or the folder to install);
    None when it loads, with the files the catalog read (``sha256``)."""
    from pathlib import Path

    setting = lerobot_checkpoints.SETTING
    if not root:
        return f"{setting} is not set: an operator installs LeRobot checkpoints there ({_DOCS})"
    report = lerobot_checkpoints.inspect(Path(root) / folder, hub_settings())
    if report["problem"]:
        return f"the LeRobot checkpoint {folder} ({setting}/{folder}): {report['problem']}"
    if sha256 and report["sha256"] != sha256:
        return (f"the LeRobot checkpoint {folder} changed since the catalog read it: an operator runs `manage.py "
                "migrate` to read it again")
    return None


_DOCS = "docs/running/lerobot-checkpoints.md"
#: Check name → ``problem(**load kwargs) -> str | None`` (the model's own check: it also runs in the model server).
CHECKS = {"smolvla-libero": lambda policy_dir="", backbone_dir="": smolvla.weights_problem(policy_dir, backbone_dir),
          "lerobot-checkpoint": _lerobot_problem}


def _declared(checkpoints: dict, checkpoint: str | None) -> dict:
    return (checkpoints.get(checkpoint) or {}).get("weights") or {} if checkpoint else {}


def weights_kwargs(checkpoints: dict, checkpoint: str | None) -> dict:
    """The ``load`` keyword arguments the checkpoint takes from settings (``{}`` when it needs no installed
    weights): each declared setting's current value, ``""`` when unset."""
    declared = _declared(checkpoints, checkpoint)
    return {kwarg: str(getattr(settings, name, "") or "") for kwarg, name in declared.get("settings", {}).items()}


def weights_problem(checkpoints: dict, checkpoint: str | None) -> str | None:
    """Why the checkpoint's installed weights cannot be used here (naming the settings and the docs page), or
    None when it needs none or they are in place."""
    declared = _declared(checkpoints, checkpoint)
    if not declared:
        return None
    check = CHECKS.get(declared.get("check", ""))
    if check is None:
        return f"the weights of this checkpoint cannot be checked (unknown check {declared.get('check')!r})"
    load = (checkpoints.get(checkpoint) or {}).get("load") or {}
    return check(**{**load, **weights_kwargs(checkpoints, checkpoint)})


def weights_status(checkpoints: dict) -> list[dict]:
    """Per checkpoint needing installed weights: ``{"checkpoint", "installed", "settings", "docs", "problem"}``
    (what /v1/images and the catalog page show)."""
    rows = []
    for name in checkpoints:
        declared = _declared(checkpoints, name)
        if declared:
            problem = weights_problem(checkpoints, name)
            rows.append({"checkpoint": name, "installed": problem is None, "settings": sorted(declared["settings"].values()),
                         "docs": declared.get("docs", ""), "problem": problem or ""})
    return rows
