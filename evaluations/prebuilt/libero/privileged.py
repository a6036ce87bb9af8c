"""The privileged state of a LIBERO scene, as the ``privileged`` key of ``prebuilt/libero`` observations.

A scripted expert (:mod:`evaluations.prebuilt.libero.expert`) reads the simulator's ground truth: object,
fixture and goal-region poses, the drawer/button joint positions, the end effector and gripper, and the task's
BDDL goal. The ``prebuilt/libero`` env adds this dict to every observation when it is made with
``privileged: true``; :mod:`bench.bench_libero_expert` builds it the same way in-process.

API (stable; the env server calls exactly these two):

* :func:`privileged_space` ``(env) -> gymnasium.spaces.Dict``
* :func:`privileged_observation` ``(env, raw_obs) -> dict`` (an element of that space)

``env`` is LIBERO's ``OffScreenRenderEnv`` (``env.env`` is the BDDL problem env), ``raw_obs`` the observation
dict its ``reset`` / ``set_init_state`` / ``step`` returned. Keys (positions in metres, world frame; quaternions
``(x, y, z, w)`` as robosuite's observations give them):

* ``eef_pos`` (3), ``eef_quat`` (4), ``gripper_qpos`` (2: left finger ≥ 0, right ≤ 0; ≈ ±0.04 open),
  ``gripper_qvel`` (2, per second: the fingers still moving or stopped on something), ``eef_vel`` (3, m/s:
  the hand body's linear velocity, robosuite's ``robot._hand_vel``; a stalled descent reads ≈ 0);
* ``<object>_pos`` (3), ``<object>_quat`` (4) for every BDDL object (``env.env.objects_dict``) and fixture
  (``env.env.fixtures_dict``): the body's origin;
* ``<object>_aabb`` (6) for every BDDL object: its collision geoms' world-frame bounding box now,
  ``(min x, min y, min z, max x, max y, max z)`` (which way a bottle lies, how tall a box is);
* ``<site>_pos`` (3), ``<site>_quat`` (4) for every BDDL region that is a MuJoCo site (e.g.
  ``wooden_cabinet_1_top_region``, ``flat_stove_1_cook_region``, ``basket_1_contain_region``);
* ``<fixture>_qpos`` (n) the positions of a fixture's joints in ``fixture.joints`` order (drawer slides in
  metres, knobs/buttons in radians), for fixtures that have joints;
* ``<fixture>_anchor`` (3n), ``<fixture>_axis`` (3n): for those joints in the same order, each joint's world
  anchor (a hinge's pivot, a knob's centre) and world unit axis (a slide's direction of +qpos, a hinge's axis of
  +qpos by the right-hand rule);
* ``<fixture>_handle`` (3n): per joint, the centre of the collision geom of the part it moves that a hand pulls:
  for a slide the one farthest along the opening direction (a drawer's handle bar), for a hinge the one farthest
  from the axis (a door's handle);
* ``<fixture>_open`` (n): per joint, the sign of qpos when open (``+1`` / ``-1``, from LIBERO's
  ``default_open_ranges``; ``default_turnon_ranges`` for a knob; ``+1`` when the fixture declares neither);
* ``<site>_qpos`` (n), ``<site>_joint`` (n): for every region site that names joints (a drawer's
  ``wooden_cabinet_1_middle_region``), their positions and their indices into its fixture's ``_qpos``;
* ``<site>_size`` (3): a region site's half-extents in its own frame (``SiteObject.size``: LIBERO's ``In`` test
  is ``|Δ| < |R · size|`` around the site, ``On`` a site ``|R Δ|_xy < size_xy``); zeros where the site has none;
* ``goal`` (Text): the BDDL goal predicates, ``"; "``-separated, each ``"<predicate> <arg> <arg>"``, e.g.
  ``"on akita_black_bowl_1 plate_1"``;
* ``obj_of_interest`` (Text): ``env.obj_of_interest`` space-separated (the object to move first, the
  destination last for the pick-and-place families); ``"none"`` if empty.

No import of Django or the platform: this module runs in ``.venv-libero``. It imports only numpy and
gymnasium at module level.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

#: Characters the two Text keys may carry (BDDL names are identifiers; predicates are lower case).
TEXT_CHARSET = string.ascii_letters + string.digits + "_ ;-"
#: Upper bound on the length of ``goal`` and ``obj_of_interest``.
TEXT_MAX_LENGTH = 512


def _problem(env: Any) -> Any:
    """The BDDL problem env under ``OffScreenRenderEnv`` (or ``env`` itself when given that)."""
    return getattr(env, "env", env) if not hasattr(env, "objects_dict") else env


def _xyzw(wxyz: np.ndarray) -> np.ndarray:
    w, x, y, z = np.asarray(wxyz, dtype=np.float64)
    return np.array([x, y, z, w], dtype=np.float64)


def _mat_to_xyzw(mat: np.ndarray) -> np.ndarray:
    import mujoco

    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.asarray(mat, dtype=np.float64).reshape(9))
    return _xyzw(quat)


def _site_names(problem: Any) -> list[str]:
    """BDDL regions that exist as MuJoCo sites in the compiled model."""
    model = problem.sim.model
    names = []
    for name in problem.object_sites_dict:
        try:
            model.site_name2id(name)
        except (ValueError, KeyError):
            continue
        names.append(name)
    return names


def _fixture_joints(problem: Any) -> dict[str, list[str]]:
    out = {}
    for name, fixture in problem.fixtures_dict.items():
        joints = [j for j in getattr(fixture, "joints", []) or []]
        if joints:
            out[name] = joints
    return out


def _site_joints(problem: Any) -> dict[str, list[str]]:
    """Region sites that name joints of their (articulated) parent fixture: drawer regions."""
    out = {}
    for name in _site_names(problem):
        site = problem.object_sites_dict[name]
        joints = list(getattr(site, "joints", None) or [])
        if joints and getattr(site, "parent_name", None) in problem.fixtures_dict:
            out[name] = joints
    return out


def open_sign(fixture: Any) -> float:
    """+1 / -1: the sign of a fixture's joint positions when open (or turned on); +1 if it declares neither."""
    articulation = getattr(fixture, "object_properties", {}).get("articulation", {})
    ranges = articulation.get("default_open_ranges") or articulation.get("default_turnon_ranges") or [1.0]
    return 1.0 if float(np.mean(ranges)) >= 0 else -1.0


def _joint_geometry(problem: Any, joint: str, sign: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(anchor, axis, handle)`` of one fixture joint in the world frame (see the module docstring)."""
    model, data = problem.sim.model, problem.sim.data
    jid = model.joint_name2id(joint)
    anchor, axis = np.array(data.xanchor[jid], dtype=np.float64), np.array(data.xaxis[jid], dtype=np.float64)
    body = int(model.jnt_bodyid[jid])
    geoms = [g for g in np.flatnonzero(model.geom_bodyid == body)
             if model.geom_contype[g] != 0 or model.geom_conaffinity[g] != 0]
    if not geoms:
        return anchor, axis, anchor.copy()
    centres = [data.geom_xpos[g] + np.asarray(data.geom_xmat[g]).reshape(3, 3) @ model.geom_aabb[g][:3] for g in geoms]
    if int(model.jnt_type[jid]) == 2:  # slide: farthest along the opening direction
        score = [float((c - anchor) @ (sign * axis)) for c in centres]
    else:  # hinge: farthest from the axis line
        score = [float(np.linalg.norm((c - anchor) - ((c - anchor) @ axis) * axis)) for c in centres]
    return anchor, axis, np.array(centres[int(np.argmax(score))], dtype=np.float64)


def _subtree_geoms(model: Any, body: int) -> np.ndarray:
    """The collision geoms of ``body`` and its descendants (all its geoms if none collide). The model's structure
    does not change while it lives, so the answer is kept on the model (a hard reset's rebuild starts afresh)."""
    kept = model.__dict__.setdefault("_rlmesh_subtree_geoms", {})
    if body not in kept:
        kept[body] = _find_subtree_geoms(model, body)
    return kept[body]


def _find_subtree_geoms(model: Any, body: int) -> np.ndarray:
    bodies = {body}
    for b in range(body + 1, model.nbody):
        if int(model.body_parentid[b]) in bodies:
            bodies.add(b)
    geoms = np.flatnonzero(np.isin(model.geom_bodyid, list(bodies)))
    collide = geoms[(model.geom_contype[geoms] != 0) | (model.geom_conaffinity[geoms] != 0)]
    return collide if collide.size else geoms


def _world_aabb(problem: Any, body: int) -> np.ndarray:
    """World-frame bounding box ``(min xyz, max xyz)`` of a body's (and its children's) collision geoms."""
    model, data = problem.sim.model, problem.sim.data
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for g in _subtree_geoms(model, body):
        centre, half = model.geom_aabb[g][:3], model.geom_aabb[g][3:]
        rot = np.asarray(data.geom_xmat[g]).reshape(3, 3)
        world_centre = data.geom_xpos[g] + rot @ centre
        world_half = np.abs(rot) @ half
        lo, hi = np.minimum(lo, world_centre - world_half), np.maximum(hi, world_centre + world_half)
    return np.concatenate([lo, hi]).astype(np.float64)


def goal_text(env: Any) -> str:
    """The BDDL goal predicates as ``"on a b; open c"`` (``parsed_problem["goal_state"]``)."""
    goal = _problem(env).parsed_problem["goal_state"]
    return "; ".join(" ".join(str(part) for part in predicate) for predicate in goal)


def obj_of_interest_text(env: Any) -> str:
    """``env.obj_of_interest`` space-separated, or ``"none"``."""
    names = list(getattr(env, "obj_of_interest", None) or _problem(env).obj_of_interest or [])
    return " ".join(names) if names else "none"


def parse_goal(text: str) -> list[list[str]]:
    """Inverse of :func:`goal_text`: ``"on a b; open c"`` → ``[["on", "a", "b"], ["open", "c"]]``."""
    return [part.split() for part in str(text).split(";") if part.strip()]


def privileged_space(env: Any):
    """The ``gymnasium.spaces.Dict`` of :func:`privileged_observation` for this env's task.

    Keys depend on the task's scene (its BDDL objects, fixtures and regions); see the module docstring.
    """
    import gymnasium as gym

    problem = _problem(env)

    def box(n: int) -> Any:
        return gym.spaces.Box(low=-np.inf, high=np.inf, shape=(n,), dtype=np.float64)

    spaces: dict[str, Any] = {"eef_pos": box(3), "eef_quat": box(4), "gripper_qpos": box(2), "gripper_qvel": box(2)}
    spaces["eef_vel"] = box(3)
    for name in [*problem.objects_dict, *problem.fixtures_dict, *_site_names(problem)]:
        spaces[f"{name}_pos"] = box(3)
        spaces[f"{name}_quat"] = box(4)
    for name in problem.objects_dict:
        spaces[f"{name}_aabb"] = box(6)
    for name, joints in _fixture_joints(problem).items():
        spaces[f"{name}_qpos"] = box(len(joints))
        for key, width in (("anchor", 3), ("axis", 3), ("handle", 3), ("open", 1)):
            spaces[f"{name}_{key}"] = box(width * len(joints))
    for name, joints in _site_joints(problem).items():
        spaces[f"{name}_qpos"] = box(len(joints))
        spaces[f"{name}_joint"] = box(len(joints))
    for name in _site_names(problem):
        spaces[f"{name}_size"] = box(3)
    text = gym.spaces.Text(max_length=TEXT_MAX_LENGTH, min_length=1, charset=TEXT_CHARSET)
    spaces["goal"] = text
    spaces["obj_of_interest"] = text
    return gym.spaces.Dict(spaces)


def privileged_observation(env: Any, raw_obs: dict) -> dict:
    """The privileged state now: a dict in :func:`privileged_space` ``(env)``.

    ``raw_obs`` supplies the end effector and gripper (``robot0_eef_pos``, ``robot0_eef_quat``,
    ``robot0_gripper_qpos``, ``robot0_gripper_qvel``); poses and joints are read from ``env``'s MuJoCo data.
    """
    problem = _problem(env)
    data = problem.sim.data
    out: dict[str, Any] = {
        "eef_pos": np.asarray(raw_obs["robot0_eef_pos"], dtype=np.float64).copy(),
        "eef_quat": np.asarray(raw_obs["robot0_eef_quat"], dtype=np.float64).copy(),
        "gripper_qpos": np.asarray(raw_obs["robot0_gripper_qpos"], dtype=np.float64).copy(),
        "gripper_qvel": np.asarray(raw_obs["robot0_gripper_qvel"], dtype=np.float64).copy(),
        "eef_vel": np.asarray(problem.robots[0]._hand_vel, dtype=np.float64).reshape(3).copy(),
    }
    for name in [*problem.objects_dict, *problem.fixtures_dict]:
        body = problem.obj_body_id[name]
        out[f"{name}_pos"] = np.array(data.body_xpos[body], dtype=np.float64)
        out[f"{name}_quat"] = _xyzw(data.body_xquat[body])
    model = problem.sim.model
    for name in _site_names(problem):
        site = model.site_name2id(name)
        out[f"{name}_pos"] = np.array(data.site_xpos[site], dtype=np.float64)
        out[f"{name}_quat"] = _mat_to_xyzw(data.site_xmat[site])
    for name in problem.objects_dict:
        out[f"{name}_aabb"] = _world_aabb(problem, problem.obj_body_id[name])
    for name, joints in _fixture_joints(problem).items():
        out[f"{name}_qpos"] = np.array([float(data.get_joint_qpos(j)) for j in joints], dtype=np.float64)
        sign = open_sign(problem.fixtures_dict[name])
        parts = [_joint_geometry(problem, j, sign) for j in joints]
        for i, key in enumerate(("anchor", "axis", "handle")):
            out[f"{name}_{key}"] = np.concatenate([part[i] for part in parts])
        out[f"{name}_open"] = np.full(len(joints), sign, dtype=np.float64)
    for name, joints in _site_joints(problem).items():
        parent = problem.fixtures_dict[problem.object_sites_dict[name].parent_name]
        out[f"{name}_qpos"] = np.array([float(data.get_joint_qpos(j)) for j in joints], dtype=np.float64)
        out[f"{name}_joint"] = np.array([list(parent.joints).index(j) for j in joints], dtype=np.float64)
    for name in _site_names(problem):
        size = getattr(problem.object_sites_dict[name], "size", None)
        out[f"{name}_size"] = np.zeros(3) if size is None else np.asarray(size, dtype=np.float64).reshape(3)
    out["goal"] = goal_text(env)
    out["obj_of_interest"] = obj_of_interest_text(env)
    return out
