"""Model × env compatibility from recorded describe envelopes, decided by rlmesh's own adapter resolution.

A model that declares a ``model_spec`` is served through an adapter that rlmesh derives from the env's tags and
spaces (``rlmesh.adapters.resolve``). The platform runs that same resolution at preview/submit time on the
envelopes its probes recorded, so an incompatible pair is a field error before any rollout instead of a failure
mid-episode. Spec-less models receive the env's raw observation and are not checked here.

The probe also uses :func:`synthetic_env_from_spec` to smoke-test a spec'd model with one predict.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "SpaceUnreadable",
    "adapter_problem",
    "space_from_describe",
    "synthetic_env_from_spec",
    "SyntheticEnv",
]


class SpaceUnreadable(ValueError):
    """A describe space dict this platform cannot rebuild (unknown kind or malformed details)."""


def _bound(value: Any, shape: list[int], fill: float) -> np.ndarray:
    """``low``/``high`` from a describe box: a scalar, a one-element list (typed_uniform) or an elementwise list
    where ``null`` stands for an infinite bound (describe writes JSON, which has no Infinity)."""
    if value is None:
        return np.full(shape, fill, dtype=np.float64)
    arr = np.asarray(value if not isinstance(value, list) else [fill if v is None else v for v in _flatten(value)],
                     dtype=np.float64)
    if arr.ndim == 0 or arr.size == 1:
        return np.full(shape, float(arr.reshape(-1)[0]), dtype=np.float64)
    if arr.size != math.prod(shape):
        raise SpaceUnreadable(f"box bound has {arr.size} values for shape {shape}")
    return arr.reshape(shape)


def _flatten(value: Any) -> list:
    if isinstance(value, list):
        return [x for v in value for x in _flatten(v)]
    return [value]


def space_from_describe(data: Any):
    """Rebuild a ``gymnasium.spaces.Space`` from a describe envelope space dict (``env_spec.observation_space``).

    Handles the kinds rlmesh's canonical codec writes: box, discrete, multi_binary, multi_discrete, text, dict,
    tuple. ``null`` box bounds become ±inf. Raises SpaceUnreadable for anything else.
    """
    from gymnasium import spaces

    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise SpaceUnreadable("a space must be an object with a kind")
    kind, details = data["kind"], data.get("details") or {}
    shape = [int(s) for s in data.get("shape") or []]
    dtype = data.get("dtype") or "float32"
    try:
        if kind == "box":
            low = _bound(details.get("low"), shape, -np.inf)
            high = _bound(details.get("high"), shape, np.inf)
            if np.issubdtype(np.dtype(dtype), np.integer):
                info = np.iinfo(np.dtype(dtype))
                low, high = np.clip(low, info.min, info.max), np.clip(high, info.min, info.max)
            return spaces.Box(low.astype(dtype), high.astype(dtype), shape=tuple(shape), dtype=np.dtype(dtype))
        if kind == "discrete":
            return spaces.Discrete(int(details["n"]), start=int(details.get("start", 0)))
        if kind == "multi_binary":
            return spaces.MultiBinary(shape or int(details["size"]))
        if kind == "multi_discrete":
            return spaces.MultiDiscrete(np.asarray(details["nvec"], dtype=np.int64))
        if kind == "text":
            kwargs = {"min_length": int(details.get("min_length", 1))}
            if details.get("charset"):
                kwargs["charset"] = details["charset"]
            return spaces.Text(int(details.get("max_length", 128)), **kwargs)
        if kind == "dict":
            return spaces.Dict({k: space_from_describe(v) for k, v in (details.get("spaces") or {}).items()})
        if kind == "tuple":
            return spaces.Tuple([space_from_describe(v) for v in details.get("spaces") or []])
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, SpaceUnreadable):
            raise
        raise SpaceUnreadable(f"{kind} space: {exc}") from None
    raise SpaceUnreadable(f"unknown space kind {kind!r}")


def _usable(section: Any) -> bool:
    return isinstance(section, dict) and "error" not in section


def adapter_problem(model_envelope: dict | None, env_envelope: dict | None) -> str | None:
    """Why a model cannot be served against an env, or None if it can (or cannot be decided).

    ``model_envelope`` and ``env_envelope`` are describe envelopes as recorded by the probes (``schema_version``
    1). Decided only when the model declares a ``model_spec`` and the env's spaces were recorded: an env without
    tags cannot be adapted to; otherwise ``rlmesh.adapters.resolve`` decides and its ``AdapterResolutionError``
    message is returned. Undecidable pairs (no spec, no recorded spaces, a space kind this platform cannot rebuild)
    return None: they are checked by the first predict at run time.
    """
    from rlmesh.adapters import AdapterResolutionError, EnvTags, ModelSpec, resolve

    spec = (model_envelope or {}).get("model_spec")
    env_spec = (env_envelope or {}).get("env_spec")
    if not _usable(spec) or not _usable(env_spec):
        return None
    tags = (env_envelope or {}).get("env_tags")
    if not _usable(tags):
        return "the env declares no adapter tags (env_tags), so a model with a model_spec cannot be adapted to it"
    try:
        observation = space_from_describe(env_spec.get("observation_space"))
        action = space_from_describe(env_spec.get("action_space"))
    except SpaceUnreadable:
        return None
    try:
        resolve(EnvTags.from_dict(tags), observation, action, ModelSpec.from_dict(spec), trust_entrypoints=False)
    except AdapterResolutionError as exc:
        return str(exc)
    except (ValueError, TypeError, KeyError) as exc:
        return f"the recorded spec or tags do not resolve ({type(exc).__name__}: {exc})"
    return None


class SyntheticEnv:
    """A stand-in env with the given spaces: ``reset``/``step`` return samples seeded from the reset seed.

    Served by ``rlmesh.EnvServer`` with the matching tags so a probe can drive one predict through a served
    model's own adapter, exactly as a real env would.
    """

    def __init__(self, observation_space, action_space):
        self.observation_space = observation_space
        self.action_space = action_space
        self.actions: list = []

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        self.actions.append(action)
        return self.observation_space.sample(), 0.0, False, False, {}

    def close(self) -> None:
        pass


def synthetic_env_from_spec(spec: dict) -> tuple[SyntheticEnv, Any]:
    """An env and its ``EnvTags`` that offer exactly what a model's spec (describe ``model_spec`` dict) reads.

    Supports dict inputs of state leaves (components with ``dim``), text leaves and image leaves with a height and
    width, and an output of components with ``dim``. Raises SpaceUnreadable for anything else (e.g. a state
    component without ``dim``), so the caller can say why the predict was not smoke-tested.
    """
    from gymnasium import spaces
    from rlmesh import adapters as a

    inputs = spec.get("input")
    if not isinstance(inputs, dict) or inputs.get("type"):
        raise SpaceUnreadable("only a dict of named inputs can be synthesized")
    obs, tags = {}, {}
    for name, leaf in inputs.items():
        kind = (leaf or {}).get("type")
        if kind == "state":
            for k, comp in enumerate(leaf.get("components") or []):
                if not comp.get("dim") or not comp.get("role"):
                    raise SpaceUnreadable(f"input {name!r} component {k} declares no dim")
                key = f"{name}_{k}"
                obs[key] = spaces.Box(-1.0, 1.0, (int(comp["dim"]),), np.float32)
                tags[key] = a.StateTag(comp["role"])
            if not leaf.get("components"):
                raise SpaceUnreadable(f"input {name!r} has no components")
        elif kind == "text":
            obs[name] = spaces.Text(64, min_length=1)
            tags[name] = a.TextTag(leaf["role"])
        elif kind == "image":
            h, w = leaf.get("height"), leaf.get("width")
            if not h or not w:
                raise SpaceUnreadable(f"image input {name!r} declares no height/width")
            obs[name] = spaces.Box(0, 255, (int(h), int(w), int(leaf.get("channels") or 3)), np.uint8)
            tags[name] = a.ImageTag(leaf["role"])
        else:
            raise SpaceUnreadable(f"input {name!r} of type {kind!r} cannot be synthesized")
    output = spec.get("output") or {}
    comps = output.get("components") or []
    if not comps or any(not c.get("dim") or not c.get("role") for c in comps):
        raise SpaceUnreadable("the output components need a role and a dim")
    action = spaces.Box(-1.0, 1.0, (sum(int(c["dim"]) for c in comps),), np.float32)
    env_tags = a.EnvTags(
        observation=tags,
        action=a.Action(*[a.Actuator(c["role"], dim=int(c["dim"])) for c in comps]),
    )
    return SyntheticEnv(spaces.Dict(obs), action), env_tags

