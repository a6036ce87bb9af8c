"""Which LIBERO envs the zygote forks (:mod:`evaluations.prebuilt.libero.zygote`), and the built env a forked server
adopts instead of building (``Libero.make`` asks :func:`adopt`). No LIBERO import: the worker (main venv) asks
:func:`forkable` too."""

from __future__ import annotations

import os

from .episodes import HARD_RESET_ENV
from .memory import lean

__all__ = ["TARGET", "adopt", "forkable", "template_key"]

#: The ``rlmesh.serve --env`` target the zygote serves.
TARGET = "evaluations.prebuilt.libero:Libero"
#: The template a forked server adopts: ``(key, env)``, set in the child just after the fork.
ADOPTABLE: tuple | None = None


def template_key(kwargs: dict) -> tuple | None:
    """What identifies a template among the make kwargs of a ``Libero`` env (the defaults of ``Libero.make`` filled
    in), or None when such an env is not forked (cameras, also for the record only, a hard reset, a process that keeps
    the old memory path)."""
    hard = kwargs.get("hard_reset")
    if hard is None:
        hard = os.environ.get(HARD_RESET_ENV, "0").strip().lower() in ("1", "true", "yes")
    if kwargs.get("cameras", "both") != "none" or kwargs.get("record_cameras", "none") != "none" or hard or not lean():
        return None
    return (kwargs.get("suite", "libero_goal"), int(kwargs.get("task_index", 0)), bool(kwargs.get("privileged", False)),
            kwargs.get("perturbation", "none"))


def forkable(kwargs: dict) -> bool:
    """Whether an env with these make kwargs is started by forking (:func:`template_key`)."""
    return template_key(kwargs) is not None


def adopt(kwargs: dict):
    """The template this forked server was made for, if ``kwargs`` name it (once: a second make builds afresh);
    None in any other process."""
    global ADOPTABLE
    if ADOPTABLE is None or template_key(kwargs) != ADOPTABLE[0]:
        return None
    env, ADOPTABLE = ADOPTABLE[1], None
    return env
