"""``prebuilt/libero-expert``: a **privileged scripted** policy for LIBERO (not a learned policy), one concept a module.

It reads the simulator's ground truth that ``prebuilt/libero`` puts under ``observation["privileged"]`` when made
with ``privileged: true`` (:mod:`evaluations.prebuilt.libero.privileged`: object and region poses, fixture joints,
end effector, gripper, the BDDL goal) and moves the end effector through waypoints with LIBERO's default OSC_POSE
delta controller. It is the baseline a VLA is compared against, and the proof that success on a task is reachable
and measured correctly; a model that sees only images cannot read this state. **Stateless**: every action is a
function of the current privileged state only (one server may serve several env sessions at once).

- :mod:`.model` — the rlmesh model the catalog serves (``LiberoExpert``) and :func:`~.model.plan`;
- :mod:`.goals` — which goal predicate comes next, and which primitive serves it;
- :mod:`.goal_text` — the BDDL goal text parsed;
- :mod:`.place` — pick and place: approach, carry, release, and when a goal counts as met;
- :mod:`.grasp` — where an object is gripped (a bowl's rim, a box from above, fingers clear of neighbours);
- :mod:`.destinations` — where each object goes (a shared region's slots, into a drawer) and leaving a container;
- :mod:`.push` — pushing a plate, and objects out of its way;
- :mod:`.fixtures` — articulated fixtures: knobs, drawers (open, close), and turning a tilted gripper back down;
- :mod:`.door` — a hinged door (the microwave) and the box behind it;
- :mod:`.cabinet_top` — a bowl on a cabinet's top or under its top panel;
- :mod:`.scene` — the bodies around an object, fixtures, a destination's container;
- :mod:`.motion` — position steps, the action vector, the gripper's states;
- :mod:`.rotation` — quaternions, yaw, where the gripper points.
"""
