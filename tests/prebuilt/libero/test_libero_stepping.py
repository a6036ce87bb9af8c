"""What a LIBERO step no longer repeats: the controller's mj_forward (evaluations/prebuilt/libero/stepping.py) and the
privileged observation's walk of the body tree (privileged._subtree_geoms).

The physics is unchanged (same digests): tests/prebuilt/libero/test_libero_memory.py (a server on the old path against forked ones)
and tests/prebuilt/libero/test_libero_parity.py (LeRobot's own env, every step) check that with the simulator.
"""

from __future__ import annotations

import pytest

from evaluations.prebuilt.libero.stepping import skip_repeated_forward


class Sim:
    def __init__(self):
        self.forwards = 0

    def forward(self):
        self.forwards += 1


class Domain:
    """robosuite's step loop in miniature: forward, _pre_action (whose controller forwards again), step."""

    def __init__(self):
        self.sim = Sim()
        self.seen: list[int] = []

    def _pre_action(self, action, policy_step=False):
        self.sim.forward()  # the controller's update()
        self.seen.append(action)
        if action == "boom":
            raise RuntimeError("controller failed")

    def substep(self, action):
        self.sim.forward()
        self._pre_action(action, True)


def test_the_substep_forwards_once_and_the_controller_still_runs():
    domain = Domain()
    domain.substep(1)
    assert domain.sim.forwards == 2  # without the skip
    skip_repeated_forward(domain)
    domain.substep(2)
    assert domain.sim.forwards == 3 and domain.seen == [1, 2]
    domain.sim.forward()  # outside _pre_action forward is the class's again
    assert domain.sim.forwards == 4 and "forward" not in vars(domain.sim)


def test_forward_comes_back_when_the_controller_raises():
    domain = Domain()
    skip_repeated_forward(domain)
    with pytest.raises(RuntimeError):
        domain.substep("boom")
    assert "forward" not in vars(domain.sim)
    domain.sim.forward()
    assert domain.sim.forwards == 2


def test_a_rebuilt_simulation_is_covered():  # a hard reset replaces domain.sim
    domain = Domain()
    skip_repeated_forward(domain)
    domain.sim = Sim()
    domain.substep(1)
    assert domain.sim.forwards == 1


def test_an_objects_collision_geoms_are_found_once_per_model(monkeypatch):
    """privileged._subtree_geoms walks the model's body tree for every object at every observation unless kept."""
    import numpy as np

    from evaluations.prebuilt.libero import privileged

    class Model:  # body 1 with child 2; geoms 0 (body 1), 1 (body 2), 2 (body 0, the world)
        nbody = 3
        body_parentid = np.array([0, 0, 1])
        geom_bodyid = np.array([1, 2, 0])
        geom_contype = np.array([1, 1, 1])
        geom_conaffinity = np.array([1, 1, 1])

    calls = []
    find = privileged._find_subtree_geoms

    def counting(model, body):
        calls.append(body)
        return find(model, body)

    model = Model()
    monkeypatch.setattr(privileged, "_find_subtree_geoms", counting)
    first = privileged._subtree_geoms(model, 1)
    again = privileged._subtree_geoms(model, 1)
    rebuilt = privileged._subtree_geoms(Model(), 1)  # a hard reset's new model: found again
    assert list(first) == [0, 1] and again is first and list(rebuilt) == [0, 1]
    assert calls == [1, 1]
