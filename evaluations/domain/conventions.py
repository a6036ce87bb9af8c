"""A model's conventions checked against its env before an episode counts: what the model does on the first
observations of a workload (its first actions) and what it declares it reads, against the env's spaces.

The field's numbers fail to reproduce silently because of a convention (a rotation, a missing state, a flipped
gripper: vla-evaluation-harness's pitfall list; LeRobot issues #952, #3247, #4206). So before a workload's first
episode is scored the platform calls the model on the first observation of up to :data:`PROBES` of its episodes and
judges the actions here. Pure functions of plain values: arrays, space bounds, the env's declared gripper.

Two kinds of finding:

- **errors** end the workload before any episode is scored (its episodes count as not run: no verdict, no rate):
  an action of another shape than the env's action space, non-finite values, a declared input whose shape the
  observation does not have;
- **warnings** name a convention that is probably wrong and let the episodes run: actions outside the bounds (how
  far), actions pinned at the bounds (unnormalised output), the same action whatever the observation, the gripper
  closed from the first step on most init states (an env that declares where its gripper is and that it starts open).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import re

import numpy as np

__all__ = ["PROBES", "Findings", "check_declared_inputs", "contract_error", "judge_first_actions"]

#: Episodes whose first observation the model is called on before the workload's first episode counts.
PROBES = 3
#: A component within this fraction of its bound counts as pinned there.
PIN_TOLERANCE = 1e-3
#: Actions count as pinned when at least this share of their components sit at a bound.
PINNED_SHARE = 0.5


@dataclass
class Findings:
    """What the first actions showed: ``errors`` (the workload ends) and ``warnings`` (it runs), each a sentence."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _shape(value) -> tuple[int, ...]:
    return tuple(np.shape(value))


def _box(space) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]] | None:
    """``(low, high, shape)`` of a Box-like space (gymnasium's or anything with ``low``/``high``/``shape``)."""
    low, high = getattr(space, "low", None), getattr(space, "high", None)
    if low is None or high is None:
        return None
    shape = tuple(space.shape)
    return (np.broadcast_to(np.asarray(low, dtype=np.float64), shape),
            np.broadcast_to(np.asarray(high, dtype=np.float64), shape), shape)


def _structure_problem(action, space, who: str) -> str | None:
    """Why ``action`` cannot be an action of ``space`` (its shape, a non-number), or None."""
    box = _box(space)
    if box is None:
        return None
    _, _, shape = box
    try:
        array = np.asarray(action)
    except (TypeError, ValueError):
        return f"{who}'s action is not an array of numbers ({type(action).__name__}); the env's action space is {shape}"
    if array.dtype.kind not in "fiub":
        return f"{who}'s action has dtype {array.dtype}, not numbers; the env's action space is {shape}"
    if _shape(array) != shape:
        return f"{who}'s action has shape {_shape(array)}; the env's action space has shape {shape}"
    if not np.all(np.isfinite(array.astype(np.float64))):
        bad = int(np.sum(~np.isfinite(array.astype(np.float64))))
        return f"{who}'s action has {bad} non-finite value{'s' if bad != 1 else ''} (NaN or inf): {array.tolist()}"
    return None


def judge_first_actions(actions: list, observations: list, space, *, who: str,
                        gripper: dict | None = None) -> Findings:
    """Judge a model's first actions, one per probed episode (``observations`` their first observations, compared
    for "the same action whatever the observation"), against the env's action ``space``.

    ``who`` names the model and task in the sentences. ``gripper`` is the env's declaration (``{"index": 6,
    "open": -1}``: which component drives the gripper and its sign when open; LIBERO's demonstrations start open).
    Returns :class:`Findings`."""
    out = Findings()
    for action in actions:
        problem = _structure_problem(action, space, who)
        if problem:
            out.errors.append(problem)
            return out
    box = _box(space)
    if box is None or not actions:
        return out
    low, high, _ = box
    arrays = [np.asarray(a, dtype=np.float64) for a in actions]
    _bounds(arrays, low, high, who, out)
    _pinned(arrays, low, high, who, out)
    _constant(arrays, observations, low, high, who, out)
    if gripper:
        _gripper(arrays, gripper, who, out)
    return out


def _bounds(arrays: list[np.ndarray], low: np.ndarray, high: np.ndarray, who: str, out: Findings) -> None:
    finite_low, finite_high = np.where(np.isfinite(low), low, -np.inf), np.where(np.isfinite(high), high, np.inf)
    worst, factor = 0.0, 1.0
    for a in arrays:
        over = np.maximum(a - finite_high, finite_low - a)
        if np.any(over > 0):
            i = int(np.argmax(over))
            bound = max(abs(float(finite_low[i])), abs(float(finite_high[i])), 1e-9)
            worst = max(worst, float(over[i]))
            factor = max(factor, abs(float(a[i])) / bound)
    if worst > 0:
        out.warnings.append(f"{who}: actions outside the env's bounds on the first observation, by up to {worst:.3g} "
                            f"({factor:.3g}× the bound): an unnormalised output? (the env clips what it gets)")


def _at_bounds(a: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Which finite-bounded components of ``a`` sit at a bound (within :data:`PIN_TOLERANCE` of the range)."""
    finite = np.isfinite(low) & np.isfinite(high)
    span = np.where(finite, high - low, 1.0)
    return finite & ((a >= high - PIN_TOLERANCE * span) | (a <= low + PIN_TOLERANCE * span))


def _pinned(arrays: list[np.ndarray], low: np.ndarray, high: np.ndarray, who: str, out: Findings) -> None:
    """Most components at a bound: an unnormalised or saturated output. Not judged for a one-component action
    space, where a bang-bang controller (Pendulum's swing-up) starts at a bound by design."""
    finite = np.isfinite(low) & np.isfinite(high)
    if np.sum(finite) < 2:
        return
    at = [np.mean(_at_bounds(a, low, high)[finite]) for a in arrays]
    if np.mean(at) >= PINNED_SHARE:
        out.warnings.append(f"{who}: actions pinned at the env's bounds ({100 * float(np.mean(at)):.0f} % of their "
                            "components at a bound on the first observation): an unnormalised output?")


def _constant(arrays: list[np.ndarray], observations: list, low: np.ndarray, high: np.ndarray, who: str,
              out: Findings) -> None:
    """The same action on different observations; not an action wholly at the bounds (a saturated controller)."""
    if len(arrays) < 2 or any(not np.array_equal(arrays[0], a) for a in arrays[1:]):
        return
    if _all_equal(observations) or np.all(_at_bounds(arrays[0], low, high)):
        return
    out.warnings.append(f"{who}: the same action {np.round(arrays[0], 4).tolist()} on {len(arrays)} different first "
                        "observations: does the model read the observation?")


def _all_equal(observations: list) -> bool:
    from .trajectory import encode

    try:
        first = encode(observations[0])
        return all(encode(o) == first for o in observations[1:])
    except (TypeError, ValueError):
        return False


def _gripper(arrays: list[np.ndarray], gripper: dict, who: str, out: Findings) -> None:
    try:
        index, open_sign = int(gripper["index"]), float(gripper["open"])
    except (KeyError, TypeError, ValueError):
        return
    values = [float(a.reshape(-1)[index]) for a in arrays if a.size > index]
    closed = sum(1 for v in values if v * open_sign < 0)
    if values and closed * 2 > len(values):
        out.warnings.append(f"{who}: the gripper closed from the first step on {closed} of {len(values)} init states "
                            f"(action[{index}] {'+' if open_sign > 0 else '−'}1 opens, and the env's episodes start "
                            "open): a flipped gripper sign?")


#: rlmesh's model server refuses an action that does not fit the env's action space before it leaves the server.
_BOX_SIZE = re.compile(r"invalid box value: data is (\d+) bytes but shape and dtype require exactly (\d+)")
_BOX_VALUE = re.compile(r"Box value at element (\d+) is ([^\s,;)]+)")
_ELEMENTS = re.compile(r"tensor element count (\d+) is not a multiple of the space element count (\d+)")


def contract_error(message: str, space, who: str) -> str | None:
    """The error for a first prediction rlmesh refused because the action does not fit the env's action space
    (``message`` the exception's words), naming the action's size and the space's shape; None for any other failure
    (a crash, a timeout: the episode meets it and records it)."""
    box = _box(space)
    value = _BOX_VALUE.search(message)
    if value is not None and box is not None:
        return (f"{who}'s action has a non-finite value ({value[2]}) at element {value[1]}; the env's action space "
                f"has shape {box[2]}")
    elements = _ELEMENTS.search(message)
    if elements is not None and box is not None:
        return (f"{who}'s action has {elements[1]} values; the env's action space has shape {box[2]} "
                f"({elements[2]} values)")
    match = _BOX_SIZE.search(message)
    if match is None or box is None:
        return None
    got, want = int(match[1]), int(match[2])
    _, _, shape = box
    itemsize = max(1, want // max(1, int(np.prod(shape, dtype=np.int64))))
    values = got / itemsize
    return (f"{who}'s action has {values:g} value{'s' if values != 1 else ''} ({got} bytes); the env's action space "
            f"has shape {shape} ({want} bytes)")


def _leaves(value, prefix: str = "") -> dict:
    """A (nested) observation's leaves by dotted path (``pixels.image``); a plain array is ``""``."""
    if isinstance(value, dict):
        out: dict = {}
        for key, item in value.items():
            out.update(_leaves(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def check_declared_inputs(declared: dict, observation, who: str) -> list[str]:
    """Errors for inputs a model declares (observation path → shape: an rlmesh ``model_spec``'s, a LeRobot
    checkpoint's input features, an openpi server's metadata) whose shape the env's first ``observation`` does not
    have; an input the observation lacks is named too. Empty when everything matches."""
    leaves = _leaves(observation)
    errors = []
    for path, shape in declared.items():
        if path not in leaves:
            errors.append(f"{who} declares the input {path!r} {tuple(shape)}, which the env's observation lacks "
                          f"(it has {', '.join(sorted(leaves)) or 'nothing'})")
        elif _shape(leaves[path]) != tuple(shape):
            errors.append(f"{who} declares the input {path!r} with shape {tuple(shape)}; the env's observation has "
                          f"{_shape(leaves[path])}")
    return errors
