"""The perturbation catalog: named, seeded changes to what the model sees, what the env receives, or the physics.

A task names one as ``"<name>:<strength>"`` (``"obs_noise:0.05"``) or ``"none"``. Driver-side perturbations
(observation noise, action noise, action repeat, action delay) are applied by the platform's episode loop to any
env; ``physics`` is applied inside the env server and needs an env that declares a ``physics`` make parameter
(the prebuilt MuJoCo and Meta-World envs do); the LIBERO-PRO perturbations (``language``, ``object``, ``swap``,
``task``: no strength; ``position_x``/``position_y``: a shift of 0.1 … 0.5) select one of LIBERO-PRO's perturbed task
sets through the env's ``perturbation`` make parameter (prebuilt/libero). Every random draw comes from a generator seeded by the episode seed
and the perturbation, so an episode is reproduced exactly by re-running its seed. A sweep is a task list that
repeats one scenario with several strengths; ``scores?groupBy=perturbation`` compares them.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CATALOG", "Perturbation", "PerturbationError", "parse", "Perturber"]


@dataclass(frozen=True)
class Kind:
    name: str
    unit: str
    minimum: float
    maximum: float
    integer: bool
    side: str  # "driver" (the platform's loop) or "env" (a make parameter of the env)
    description: str
    #: For an env-side kind: the make parameter it sets (``physics`` gets the strength, ``perturbation`` a label).
    param: str = ""
    #: True for a kind that takes no strength (written as its bare name, e.g. ``"swap"``).
    flag: bool = False
    #: The only strengths allowed, when the env ships fixed levels (LIBERO-PRO's position shifts).
    levels: tuple[float, ...] = ()

    def make_value(self, strength: float):
        """The value of ``param`` for this kind at ``strength``."""
        if self.param == "physics":
            return strength
        return self.name if self.flag else f"{self.name}:{strength:g}"


_LIBERO = "(LIBERO-PRO's perturbed task sets; needs an env with a `perturbation` make parameter: prebuilt/libero)"
_SHIFTS = (0.1, 0.2, 0.3, 0.4, 0.5)


#: Every perturbation a task may name, with the range of its strength.
CATALOG: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("obs_noise", "σ", 0.0, 10.0, False, "driver",
             "Gaussian noise N(0, σ²) added to every floating-point array of the observation before the model "
             "sees it (σ in observation units); images, integers and text are left alone."),
        Kind("action_noise", "σ", 0.0, 10.0, False, "driver",
             "Continuous actions: Gaussian noise N(0, σ²) added, then clipped to the action space. Discrete "
             "actions: with probability σ (≤ 1) a uniformly random action replaces the model's."),
        Kind("action_repeat", "steps", 1, 100, True, "driver",
             "The model acts every k env steps and its action is held in between (frame skip); rewards of the "
             "held steps count toward the return."),
        Kind("action_delay", "steps", 0, 100, True, "driver",
             "The env receives the action the model chose k steps earlier; the first k steps repeat the first "
             "action (latency)."),
        Kind("physics", "s", 0.0, 0.9, False, "env",
             "Every body mass and geom friction scaled by a factor drawn uniformly from [1 − s, 1 + s] at each "
             "reset (needs an env with a `physics` make parameter: prebuilt/mujoco, prebuilt/metaworld).", "physics"),
        Kind("language", "", 1, 1, True, "env", "The instruction paraphrased; scene and goal unchanged " + _LIBERO,
             "perturbation", flag=True),
        Kind("object", "", 1, 1, True, "env", "Objects replaced by look-alikes of another colour or size " + _LIBERO,
             "perturbation", flag=True),
        Kind("swap", "", 1, 1, True, "env", "The initial positions of objects swapped " + _LIBERO, "perturbation",
             flag=True),
        Kind("task", "", 1, 1, True, "env", "A different task in the same scene: new goal and instruction " + _LIBERO,
             "perturbation", flag=True),
        Kind("position_x", "m", 0.1, 0.5, False, "env", "Object regions shifted along x by 0.1 … 0.5 " + _LIBERO,
             "perturbation", levels=_SHIFTS),
        Kind("position_y", "m", 0.1, 0.5, False, "env", "Object regions shifted along y by 0.1 … 0.5 " + _LIBERO,
             "perturbation", levels=_SHIFTS),
    )
}


class PerturbationError(ValueError):
    """A perturbation name this platform does not know, or a strength outside its range."""


@dataclass(frozen=True)
class Perturbation:
    """A parsed perturbation; ``name`` is ``"none"`` for an unperturbed task."""

    name: str = "none"
    strength: float = 0.0

    @property
    def label(self) -> str:
        """Canonical text, e.g. ``"obs_noise:0.05"``, ``"action_repeat:2"``, ``"none"``: the scores group key."""
        if self.name == "none":
            return "none"
        if CATALOG[self.name].flag:
            return self.name
        return f"{self.name}:{int(self.strength)}" if CATALOG[self.name].integer else f"{self.name}:{self.strength:g}"

    @property
    def side(self) -> str:
        return CATALOG[self.name].side if self.name != "none" else "driver"

    def as_dict(self) -> dict:
        return {"name": self.name, "strength": self.strength, "label": self.label}


def parse(text: str | None) -> Perturbation:
    """Parse ``None``/``""``/``"none"`` or ``"<name>:<strength>"``; raises PerturbationError with a message
    naming the catalog or the allowed range."""
    if text in (None, "", "none"):
        return Perturbation()
    name, sep, raw = str(text).partition(":")
    if name == "none":
        raise PerturbationError(f'"{text}": none takes no strength; write "none"')
    if name not in CATALOG:
        raise PerturbationError(f'unknown perturbation "{name}" (available: none, {", ".join(CATALOG)})')
    kind = CATALOG[name]
    if kind.flag:
        if sep:
            raise PerturbationError(f'"{text}": {name} takes no strength; write "{name}"')
        return Perturbation(name, 1.0)
    if not sep or not raw:
        raise PerturbationError(f'"{text}": give a strength, e.g. "{name}:{kind.maximum / 10 if not kind.integer else 2:g}"')
    try:
        value = float(raw)
    except ValueError:
        raise PerturbationError(f'"{text}": the strength must be a number') from None
    if not np.isfinite(value) or not kind.minimum <= value <= kind.maximum:
        raise PerturbationError(f'"{text}": {name} strength ({kind.unit}) must be between {kind.minimum:g} and {kind.maximum:g}')
    if kind.levels and not any(abs(value - level) < 1e-9 for level in kind.levels):
        raise PerturbationError(f'"{text}": {name} comes in the shifts {", ".join(f"{v:g}" for v in kind.levels)} only')
    if kind.integer and value != int(value):
        raise PerturbationError(f'"{text}": {name} takes a whole number of {kind.unit}')
    return Perturbation(name, float(int(value)) if kind.integer else value)


class Perturber:
    """Applies one driver-side perturbation within one episode; state (delay queue, held action) lives here.

    ``rng`` is seeded by (episode seed, perturbation name), so the same seed perturbs identically.
    """

    def __init__(self, perturbation: Perturbation, seed: int, action_space: Any):
        self.p = perturbation
        self.rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(perturbation.label.encode())])
        # rlmesh clients hand out rlmesh.spaces; the noise rules are written against gymnasium's.
        self.action_space = action_space.to_gymnasium_space() if hasattr(action_space, "to_gymnasium_space") else action_space
        self.queue: list = []
        self.held = None
        self.age = 0

    def observation(self, obs):
        if self.p.name != "obs_noise" or self.p.strength == 0:
            return obs
        return self._noisy(obs)

    def _noisy(self, value):
        if isinstance(value, dict):
            return {k: self._noisy(v) for k, v in value.items()}
        if isinstance(value, tuple):
            return tuple(self._noisy(v) for v in value)
        if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
            return (value + self.rng.normal(0.0, self.p.strength, value.shape)).astype(value.dtype)
        return value

    def wants_prediction(self) -> bool:
        """False while an action_repeat is holding the previous action (no predict call this step)."""
        if self.p.name != "action_repeat" or self.held is None:
            return True
        return self.age % int(self.p.strength) == 0

    def action(self, action):
        """The action the env receives this step, given the model's (or the held) ``action``."""
        from gymnasium import spaces

        if self.p.name == "action_repeat":
            if self.wants_prediction():
                self.held = action
            self.age += 1
            return self.held
        if self.p.name == "action_delay" and self.p.strength > 0:
            self.queue.append(action)
            if len(self.queue) > int(self.p.strength):
                return self.queue.pop(0)
            return self.queue[0]
        if self.p.name == "action_noise" and self.p.strength > 0:
            space = self.action_space
            if isinstance(space, spaces.Box):
                arr = np.asarray(action, dtype=space.dtype)
                noisy = arr + self.rng.normal(0.0, self.p.strength, arr.shape)
                return np.clip(noisy, space.low, space.high).astype(space.dtype)
            if isinstance(space, spaces.Discrete):
                if self.rng.random() < min(1.0, self.p.strength):
                    return np.int64(space.start + self.rng.integers(space.n))
                return action
        return action
