"""Goals of several objects in a row for ``prebuilt/libero-expert``'s pick and place
(:mod:`evaluations.prebuilt.libero.expert.place`): leaving a container after a release, and sharing one fixture
region between several objects.

* **Leaving a container.** After a load is let go into an ``in`` goal's container (the basket), the open hand
  rises over the container's rim before it travels on to the next object (:func:`leave_height`).
* **A shared fixture region.** When several ``on`` goals name the same fixture region (libero_10: both moka pots
  on the stove's cook region, a 15 cm square), each object gets its own slot in it instead of the centre
  (:func:`destination`): slot ``i`` of ``k`` (goal order) lies ``(i − (k−1)/2) × spacing`` from the centre along
  the region's longer side (x on a tie), the spacing the widest of the objects' narrow sides plus
  :data:`SLOT_GAP`, kept :data:`SLOT_MARGIN` inside the region. The axis does not follow the objects' bounding
  boxes: a pot turned in the fingers swapped it, moved the first pot's slot by 5 cm, and the expert went back for
  the pot it had already set down. LIBERO's ``On`` for a region site takes the object's origin
  anywhere within its half-extents, so both slots count.
* **Set down on a fixture.** A load held over a fixture region with its bottom down on the fixture's surface
  is let go there (:func:`resting`), even while the hand still moves: pressing the pot onto the stove, the hand
  kept correcting its xy against the pot's friction and never stopped.
"""

from __future__ import annotations

import numpy as np

from .fixtures import SLIDE_OPEN, joint_of, open_direction, part, signed_qpos
from .goal_text import as_text, parse_goal
from .motion import vec
from .scene import container_aabb


#: An open hand within LEAVE_MARGIN (m, xy) of an ``in`` goal's container (the basket) rises to LEAVE_CLEARANCE (m)
#: above its top before it travels on: leaving the basket low toward the next object, the trailing finger
#: hooked the rim from inside and lifted the basket, and the box just put in it, off the table.
LEAVE_MARGIN = 0.06
#: A load goes into a drawer this far (m) behind its handle, along the slide: a drawer pulled out only part way
#: has its region's centre still under the cabinet's top (the bowl was let go over the cabinet, not the drawer).
#: 6 cm behind it, the bowl came to rest on the drawer's front wall and the cabinet's edge (libero_goal task 3,
#: init states 1, 5, 12 and 27, the top drawer out 9 cm).
DRAWER_INSET = 0.075
#: ... or, in a drawer pulled all the way out, farther, so the load's near edge is FRONT_WALL (m) behind the
#: handle: 6 cm behind it, the bowl's edge sat on the bottom drawer's front wall (libero_10 task 3).
FRONT_WALL = 0.03
LEAVE_CLEARANCE = 0.04
#: Free space (m) between two objects in neighbouring slots of a shared region; a slot's centre stays this far
#: (m) inside the region's half-extent.
SLOT_GAP = 0.02
SLOT_MARGIN = 0.01
#: A load whose bottom is within RESTING_ABOVE (m) of a fixture region's site rests on the fixture's surface.
RESTING_ABOVE = 0.04


def leave_height(priv: dict, eef: np.ndarray, grasp: np.ndarray) -> float | None:
    """The height (m) an open hand must first rise to, straight up, before approaching ``grasp``: the top of an
    ``in`` goal's container (its bounding box) plus :data:`LEAVE_CLEARANCE`, when the hand is over that container
    (within :data:`LEAVE_MARGIN` of its footprint) and ``grasp`` is outside it; else ``None``. Above that height
    the hand travels on level, no lower, until it is clear of the container."""
    for box in _containers(priv):
        over = bool(np.all(eef[:2] > box[:2] - LEAVE_MARGIN) and np.all(eef[:2] < box[3:5] + LEAVE_MARGIN))
        inside = bool(np.all(grasp[:2] > box[:2]) and np.all(grasp[:2] < box[3:5]))
        if over and not inside:
            return float(box[5] + LEAVE_CLEARANCE)
    return None


def _containers(priv: dict) -> list[np.ndarray]:
    """The bounding boxes (6, m) of the containers the goal's ``in`` predicates name (the basket)."""
    boxes = [container_aabb(priv, p[2]) for p in parse_goal(as_text(priv["goal"])) if len(p) == 3 and p[0] == "in"]
    return [box for box in boxes if box is not None]


def over_container(priv: dict) -> bool:
    """The hand is over an ``in`` goal's container (within :data:`LEAVE_MARGIN` of its footprint, xy): where a load
    is let go into it, the fingers open and the hand rises over its rim (:func:`leave_height`). A push toward the
    next object (a carton lying beside the butter) waits until the hand is past it: started there, it kept the
    fingers closed on the cream cheese held over the basket and carried it away (libero_10 task 1, init 34, 46)."""
    eef = vec(priv, "eef_pos")
    return any(bool(np.all(eef[:2] > box[:2] - LEAVE_MARGIN) and np.all(eef[:2] < box[3:5] + LEAVE_MARGIN))
               for box in _containers(priv))


def fixture_region(priv: dict, target: str) -> bool:
    """``target`` is a fixture's region site (it has half-extents, and no object's bounding box contains it)."""
    return f"{target}_size" in priv and container_aabb(priv, target) is None


def resting(priv: dict, obj: str, target: str, dest: np.ndarray) -> bool:
    """A held ``obj`` already stands on the fixture whose region ``target`` is: its bottom (bounding box) within
    :data:`RESTING_ABOVE` of the region's site. The stove's surface is 2.4 cm over its cook region's site, so a
    moka pot set down on it stopped with the hand 5.3 cm over the release height, outside the stalled release's
    5 cm, and was held there until the step cap (libero_10 task 8, init state 0); in init state 2 the hand,
    pressing the pot onto the stove, kept correcting its xy and never stopped."""
    if not fixture_region(priv, target) or f"{obj}_aabb" not in priv:
        return False
    return bool(vec(priv, f"{obj}_aabb")[2] < dest[2] + RESTING_ABOVE)


def whole_drawer(priv: dict, target: str) -> bool:
    """A load goes all the way into drawer region ``target`` (see :data:`FRONT_WALL`): the drawer is pulled all the
    way out (past ``SLIDE_OPEN``), or the goal closes it again (pushed shut, the part-open drawer then no longer
    counted as out all the way, and the bowl, let go 2.4 cm off the narrower point, counted as not in: libero_10
    task 3, init state 2)."""
    joint = joint_of(priv, target) if f"{target}_joint" in priv else None
    if joint is None:
        return False
    goal = parse_goal(as_text(priv["goal"])) if "goal" in priv else []
    closes = any(len(p) == 2 and p[0].lower() == "close" and p[1] == target for p in goal)
    return closes or signed_qpos(priv, *joint) > SLIDE_OPEN


def destination(priv: dict, obj: str, target: str) -> np.ndarray:
    """Where ``obj``'s origin goes for an ``on`` / ``in`` goal onto ``target`` (3, m): ``target``'s position, or
    ``obj``'s slot in it when ``target`` is a fixture region several ``on`` goals share (see the module), or a
    drawer region's point :data:`DRAWER_INSET` behind the handle when its centre lies farther back."""
    dest = vec(priv, f"{target}_pos").copy()
    joint = joint_of(priv, target) if f"{target}_joint" in priv else None
    if joint is not None:  # a drawer: into its part out of the cabinet
        u = open_direction(priv, *joint)
        inset = DRAWER_INSET
        if f"{obj}_aabb" in priv and whole_drawer(priv, target):  # clear of its front wall
            box = vec(priv, f"{obj}_aabb")
            inset = max(inset, 0.5 * float(np.abs(box[3:] - box[:3]) @ np.abs(u)) + FRONT_WALL)
        front = float((part(priv, *joint, "handle") - dest) @ u) - inset
        return dest + max(front, 0.0) * u
    if not fixture_region(priv, target):
        return dest
    sharing = [p[1] for p in parse_goal(as_text(priv["goal"])) if len(p) == 3 and p[0] == "on" and p[2] == target]
    sharing = [name for name in sharing if f"{name}_aabb" in priv]
    if len(sharing) < 2 or obj not in sharing:
        return dest
    sizes = np.array([vec(priv, f"{name}_aabb")[3:5] - vec(priv, f"{name}_aabb")[:2] for name in sharing])
    region = vec(priv, f"{target}_size")
    axis = 1 if region[1] > region[0] else 0  # along the region's longer side (x on a tie)
    spacing = float(sizes.min(axis=1).max()) + SLOT_GAP  # the objects side by side, their narrow sides facing
    half = float(region[axis]) - SLOT_MARGIN
    offset = (sharing.index(obj) - 0.5 * (len(sharing) - 1)) * spacing
    dest[axis] += float(np.clip(offset, -half, half))
    return dest
