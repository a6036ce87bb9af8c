"""One ``mj_forward`` per physics substep instead of two (issue 26: the cost of an episode). Runs in the LIBERO venv.

robosuite 1.4's ``MujocoEnv.step`` runs each of a control step's 25 physics substeps (500 Hz physics, 20 Hz control)
as ``sim.forward()``, ``_pre_action(action)`` (the arm's OSC controller and the gripper), ``sim.step()``. The
controller's ``update()``, the first thing ``_pre_action`` does, calls ``sim.forward()`` again on the same state:
between the two calls nothing is written (the controller writes ``ctrl`` only after reading the state), so the
second call recomputes what the first left in ``mjData``. It was 0.12 ms of the ~0.8 ms a substep costs.

:func:`skip_repeated_forward` makes ``sim.forward()`` a no-op while ``_pre_action`` runs. Measured on this 2-core
host, in-process, the expert on ``libero_object/1`` seeds 0-3 (780 steps): 11.6 s → 9.6 s, the same trajectory
digests; ``tests/test_libero_memory.py`` compares a server on the old path (``RLMESH_LIBERO_LEAN=0``, which also
turns this off) with servers that skip, digest by digest, and ``tests/test_libero_parity.py`` compares every step
with LeRobot's own LIBERO env, which does not skip.
"""

from __future__ import annotations

from typing import Any

__all__ = ["skip_repeated_forward"]


def _already_forwarded() -> None:
    """``sim.forward`` inside ``_pre_action``: the substep's ``mj_forward`` already ran on this state."""


def skip_repeated_forward(domain: Any) -> None:
    """Wrap ``domain._pre_action`` (a LIBERO BDDL domain, robosuite ``MujocoEnv``) so that ``domain.sim.forward()``
    does nothing while it runs. Reads ``domain.sim`` at each call, so a hard reset's new simulation is covered."""
    inner = domain._pre_action

    def pre_action(action, policy_step=False):
        sim = domain.sim
        sim.forward = _already_forwarded
        try:
            inner(action, policy_step)
        finally:
            del sim.forward  # the class's own forward again

    domain._pre_action = pre_action
