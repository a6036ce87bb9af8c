"""LIBERO's fast reset: the task's compiled MuJoCo model kept across its episodes, and everything an episode
depends on put back as a rebuild would leave it. Runs in the LIBERO venv.

robosuite's ``hard_reset=True`` (LIBERO's default) rebuilds the scene's XML, compiles it into a new ``MjModel``,
makes a new ``MjData`` and a new offscreen render context at every reset: 1.6–4.8 s, most of it the render context
(≈ 1 s) and the compile (≈ 0.45 s). :func:`soft_reset` gives the same start state without any of that. What a
rebuild gives an episode, and how the soft reset gives the same:

- **the model** (``MjModel``): every array and option a compile of the scene's XML produces; episodes write some of
  them (LIBERO's reset writes the sampled fixture placement into ``body_pos``/``body_quat``, robosuite's visualizer
  writes ``site_rgba``). :class:`SceneSnapshot` compiles the XML once and keeps a copy of every array except the
  compiled assets (meshes, textures, height fields, skins, BVH: 230 MB that nothing in robosuite or LIBERO writes;
  the equivalence test compares them too; what is kept is ≈ 0.2 MB), and puts them back before each reset;
- **the data** (``MjData``): ``mj_resetData`` then ``mj_forward`` is what a fresh ``MjData`` is after robosuite's
  ``_initialize_sim`` (``mj_makeData`` resets, then robosuite forwards): positions, velocities, controls,
  activations, the solver's warm start, time;
- **the gripper**: the Panda gripper model's ``current_action`` accumulates the gripper command across steps; a
  rebuild makes a new gripper model with zeros;
- **LIBERO's object properties** (a stove's burner flag) are not restored: setting the init state recomputes them
  from the joint positions (``_post_process``) before anything reads them;
- **the render context** is kept (a rebuild makes a new one): it holds no scene state; the camera images of both
  paths were compared equal (``libero_spatial/9``, both cameras, after the reset and after 5 steps);
- then robosuite's own reset: ``_reset_internal`` (the robot's init noise from NumPy's global RNG, new
  controllers, the observables' reset, LIBERO's placement of fixtures and objects from that RNG), ``forward``, the
  visualisation sites off, the observation; a ``RandomizationError`` retries the whole reset, as LIBERO's wrapper
  does.

Nothing of the scene's construction draws from the global RNG and its XML is the same at every rebuild (checked by
the equivalence test through the trajectory digests), so the RNG stream a seed starts is consumed identically.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

__all__ = ["ASSET_PREFIXES", "RESTORE_STEPS", "SceneSnapshot", "one_build_of_property_samplers", "reset_grippers",
           "scene_state_digests", "soft_reset"]

#: Model arrays of the compiled assets, not snapshotted (nothing writes them; the equivalence test compares them).
ASSET_PREFIXES = ("mesh_", "tex_", "bvh_", "hfield_", "skin_", "flex_", "oct_")
#: Option-like structs of an ``MjModel`` (fields: numbers and small arrays; ``vis`` has nested structs).
_MODEL_STRUCTS = ("opt", "vis", "stat")


def _arrays(obj: Any) -> dict[str, np.ndarray]:
    """Every public ndarray attribute of a MuJoCo struct (``MjModel``/``MjData``), by name (views, not copies)."""
    out = {}
    for name in dir(obj):
        if name.startswith("_"):
            continue
        value = getattr(obj, name, None)
        if isinstance(value, np.ndarray):
            out[name] = value
    return out


def _struct_fields(struct: Any, prefix: str = "") -> dict[str, Any]:
    """The public fields of an option struct as ``{dotted name: value copy}``, nested structs flattened."""
    out: dict[str, Any] = {}
    for name in dir(struct):
        if name.startswith("_"):
            continue
        value = getattr(struct, name, None)
        if isinstance(value, np.ndarray):
            out[prefix + name] = value.copy()
        elif isinstance(value, (bool, int, float)):
            out[prefix + name] = value
        elif type(value).__module__.startswith("mujoco") and not callable(value):
            out.update(_struct_fields(value, f"{prefix}{name}."))
    return out


def _set_field(root: Any, dotted: str, value: Any) -> None:
    *path, leaf = dotted.split(".")
    for name in path:
        root = getattr(root, name)
    current = getattr(root, leaf)
    if isinstance(current, np.ndarray):
        np.copyto(current, value)
    elif current != value:
        setattr(root, leaf, value)


class SceneSnapshot:
    """The scene as a rebuild starts it: the model compiled from the scene's XML (all arrays but the compiled assets,
    the ``opt``/``vis``/``stat`` structs).

    ``env`` is the robosuite env (a LIBERO problem, ``OffScreenRenderEnv(...).env``). Costs one XML compile
    (≈ 0.45 s) when taken and ≈ 0.2 MB held (338 arrays and 111 struct fields of ``libero_spatial/0``; its compiled
    assets, not kept, are 268 MB).
    """

    def __init__(self, env):
        import mujoco

        if any(seg is not None for seg in getattr(env, "camera_segmentations", None) or ()):
            # robosuite shrinks every site for segmentation cameras when it sets up the observables, which a rebuild
            # redoes after each reset and this snapshot would undo: not supported (the platform renders none).
            raise ValueError("the soft reset does not support segmentation cameras: use hard_reset=True")
        xml = env.model.get_xml()
        if getattr(env, "_xml_processor", None) is not None:
            xml = env._xml_processor(xml)
        compiled = mujoco.MjModel.from_xml_string(xml)  # what robosuite's _initialize_sim compiles at a rebuild
        self.arrays = {name: array.copy() for name, array in _arrays(compiled).items()
                       if not name.startswith(ASSET_PREFIXES)}
        self.structs = {f"{s}.{k}": v for s in _MODEL_STRUCTS for k, v in _struct_fields(getattr(compiled, s)).items()}

    def restore(self, env) -> None:
        """Put the model's arrays and structs back as compiled (in place: the sim, its render context and the
        controllers keep their references)."""
        model = env.sim.model._model
        live = _arrays(model)
        for name, array in self.arrays.items():
            np.copyto(live[name], array)
        for dotted, value in self.structs.items():
            _set_field(model, dotted, value)


def one_build_of_property_samplers(env) -> None:
    """Make each model build of ``env`` (a LIBERO problem) start its ``object_property_initializers`` afresh.

    LIBERO creates that list once, in ``__init__``, and appends the task's open/close and on/off samplers (a drawer
    closed, a stove off) to it at every model build without clearing it; each reset draws one joint value per entry
    from NumPy's global RNG before it samples the fixtures' placement. Under robosuite's hard reset (a build per
    episode) the n-th episode of an env drew n + 2 values, so on such tasks (28 of the 130 by their BDDL init
    sections, e.g. ``libero_spatial/4``; none of ``libero_goal``) the seed's fixture placement depended on how many episodes the
    env had run before. With this, every build holds one sampler per predicate, as the single build of the soft
    reset does: the seed alone decides the episode in both paths."""
    load = env._load_model

    def load_model():
        env.object_property_initializers.clear()
        load()

    env._load_model = load_model


def reset_grippers(env) -> None:
    """Zero each gripper model's accumulated command, as a rebuilt gripper model starts (``GripperModel.__init__``)."""
    for robot in env.robots:
        gripper = getattr(robot, "gripper", None)
        if gripper is not None and hasattr(gripper, "current_action"):
            gripper.current_action = np.zeros(gripper.dof)


#: The restoration steps of :func:`soft_reset`, in order; a test drops one to show the digests then differ.
RESTORE_STEPS = ("model", "data", "gripper")


def soft_reset(env, snapshot: SceneSnapshot, *, skip: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Reset ``env`` (the robosuite env of a LIBERO ``ControlEnv``) to the state a hard reset gives, without
    rebuilding: restore the scene (:class:`SceneSnapshot`), a fresh ``MjData`` (``mj_resetData`` + ``mj_forward``),
    the grippers, then robosuite's ``_reset_internal`` (robot init noise, controllers, observables, LIBERO's placement
    from NumPy's global RNG); returns robosuite's observation dict. ``skip`` names steps of :data:`RESTORE_STEPS` to
    leave out (tests only). Seed the RNG (``env.seed(s)``) before, as before a hard reset."""
    from robosuite.utils.errors import RandomizationError

    while True:
        if "model" not in skip:
            snapshot.restore(env)
        if "data" not in skip:
            env.sim.reset()
            env.sim.forward()
        if "gripper" not in skip:
            reset_grippers(env)
        try:
            env._reset_internal()
        except RandomizationError:  # LIBERO's ControlEnv.reset retries a failed placement with a new reset
            continue
        break
    env.sim.forward()
    env._obs_cache = {}
    env.visualize(vis_settings={vis: False for vis in env._visualizations})
    return env._get_observations(force_update=True)


def scene_state_digests(env) -> dict[str, str]:
    """SHA-256 (hex, 16 chars) of each part of the simulator state, to compare two envs: ``model.<array>`` for every
    ``MjModel`` array (the assets included), ``model.<struct field>``, ``data.<array>`` for every ``MjData`` array
    but the timers and solver statistics, and ``gripper`` (the grippers' accumulated command)."""
    model, data = env.sim.model._model, env.sim.data._data
    out = {f"model.{k}": _sha(v) for k, v in _arrays(model).items()}
    for struct in _MODEL_STRUCTS:
        out.update({f"model.{k}": _sha(v) for k, v in _struct_fields(getattr(model, struct), f"{struct}.").items()})
    skip_data = ("timer", "solver", "warning", "maxuse", "nbuffer", "narena")
    out.update({f"data.{k}": _sha(v) for k, v in _arrays(data).items() if not k.startswith(skip_data)})
    out["gripper"] = _sha([getattr(getattr(r, "gripper", None), "current_action", None) for r in env.robots])
    return out


def _sha(value: Any) -> str:
    from evaluations.domain.trajectory import encode

    return hashlib.sha256(encode(value)).hexdigest()[:16]
