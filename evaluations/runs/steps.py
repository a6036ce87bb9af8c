"""Recorded steps: what an episode observed and did, kept for a dataset export (a task's ``recordSteps``).

An episode that keeps its steps runs the session loop (:mod:`evaluations.runs.session`) with a :class:`StepRecorder`.
It holds every observation the env returned (the reset's, then one per step: ``steps + 1`` in all, as the env sent
them, before a driver-side perturbation touched what the model saw), the action the env received (after a
driver-side perturbation: what was executed), the reward, ``terminated``/``truncated`` and the env's success flag of
each step. It is written as one compressed ``.npz`` (NumPy's zip of ``.npy`` arrays, read with
``np.load(..., allow_pickle=False)``) into Django's storage, ``Episode.steps_file``:

- ``obs/<path>``: one array per observation leaf, ``(steps + 1, *shape)`` with the leaf's dtype; a nested
  observation's path joins its keys with dots (``obs/pixels.image``, ``obs/agent_pos``); a plain array observation is
  ``obs/`` alone. Text leaves (an instruction) are Unicode arrays. A leaf missing from some observation or changing
  shape is left out and named in ``steps_meta["skipped"]``.
- ``action`` (or ``action/<path>`` for a dict action): ``(steps, *shape)``.
- ``reward`` float64 ``(steps,)``; ``terminated``, ``truncated`` bool ``(steps,)`` (the last step is truncated too
  when the platform's cap ended the episode, as ``Episode.truncated`` says); ``success`` int8 ``(steps,)``: 1, 0, or
  -1 when the step's info carried no flag.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Mapping

import numpy as np
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from ..domain.outcomes import env_success_flag
from .recording import RecordBudget, leaf_bytes

__all__ = ["OBS_PREFIX", "StepRecorder", "flatten", "load_steps"]

logger = logging.getLogger(__name__)

OBS_PREFIX = "obs/"


def flatten(value, prefix: str = "") -> dict[str, object]:
    """The leaves of a (nested) observation or action by dotted path: ``{"pixels.image": array, "agent_pos": array,
    "instruction": "…"}``; a leaf that is not a mapping, list or tuple is one entry (``""`` for a plain array)."""
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, (list, tuple)):
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}.{i}" if prefix else str(i)))
        return out
    return {prefix: value}


def _array(value) -> np.ndarray:
    if isinstance(value, str):
        return np.asarray(value, dtype=np.str_)
    return np.asarray(value)


def _stack(rows: list[dict[str, object]], prefix: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """One ``(len(rows), *shape)`` array per leaf named ``prefix + path``; the leaves that are missing from a row or
    change shape or kind, which are left out."""
    keys = dict.fromkeys(k for row in rows for k in row)
    arrays, skipped = {}, []
    for key in keys:
        try:
            if any(key not in row for row in rows):
                raise ValueError("missing from some steps")
            values = [_array(row[key]) for row in rows]
            if values[0].dtype.kind == "O" or len({(v.shape, v.dtype.kind) for v in values}) > 1:
                raise ValueError("changes shape or kind")
            arrays[prefix + key] = np.stack(values)
        except (TypeError, ValueError):
            skipped.append(prefix + key)
    return arrays, skipped


class StepRecorder:
    """Collects one episode's steps (see the module docstring); does nothing unless ``enabled``. ``budget`` (a
    :class:`~evaluations.runs.recording.RecordBudget` shared with the episode's video frames) bounds what it holds:
    once the budget stops, the steps kept so far are dropped at once and :meth:`save` stores none, saying why."""

    def __init__(self, enabled: bool, budget: RecordBudget | None = None):
        self.enabled = enabled
        self.budget = budget
        #: The env's control rate (frames per second of a dataset made of these steps), set by the session loop.
        self.fps: int | None = None
        self.observations: list[dict[str, object]] = []
        self.actions: list[dict[str, object]] = []
        self.rewards: list[float] = []
        self.terminated: list[bool] = []
        self.truncated: list[bool] = []
        self.success: list[int] = []

    def _fits(self, *leaves: dict) -> bool:
        """Whether the budget takes these leaves; when it does not, every step kept so far is dropped."""
        if self.budget is None or self.budget.take(sum(leaf_bytes(x) for x in leaves), len(self.rewards)):
            return True
        self.enabled = False
        self.observations, self.actions, self.rewards = [], [], []
        self.terminated, self.truncated, self.success = [], [], []
        return False

    @property
    def stopped(self) -> dict | None:
        """Where and why the budget stopped the recording (``RecordBudget.stopped``), or None."""
        return self.budget.stopped if self.budget is not None else None

    def reset(self, observation, images: dict | None = None) -> None:
        """Keep the reset's observation, with ``images`` rendered for the record beside it (by observation path)."""
        if self.enabled:
            leaves = {**flatten(observation), **(images or {})}
            if self._fits(leaves):
                self.observations.append(leaves)

    def step(self, action, observation, reward, terminated, truncated, info, images: dict | None = None) -> None:
        """Keep a step: the action sent, the observation it led to (with ``images`` rendered beside it), its reward,
        end flags and the env's success flag."""
        if not self.enabled:
            return
        sent, leaves = flatten(action), {**flatten(observation), **(images or {})}
        if not self._fits(sent, leaves):
            return
        self.actions.append(sent)
        self.observations.append(leaves)
        self.rewards.append(float(reward))
        self.terminated.append(bool(terminated))
        self.truncated.append(bool(truncated))
        flag = env_success_flag(info)
        self.success.append(-1 if flag is None else int(flag))

    def truncate(self) -> None:
        """The platform ended the episode at its last step (a ``maxSteps`` cap, the step bound, the wall-time cap)."""
        if self.enabled and self.truncated:
            self.truncated[-1] = True

    def arrays(self) -> tuple[dict[str, np.ndarray], list[str]]:
        """The ``.npz`` members (module docstring) and the leaves left out."""
        obs, skipped_obs = _stack(self.observations, OBS_PREFIX)
        actions, skipped_actions = _stack(self.actions, "action/") if self.actions else ({}, [])
        if set(actions) == {"action/"}:
            actions = {"action": actions["action/"]}
        out = {**obs, **actions, "reward": np.asarray(self.rewards, dtype=np.float64),
               "terminated": np.asarray(self.terminated, dtype=bool), "truncated": np.asarray(self.truncated, dtype=bool),
               "success": np.asarray(self.success, dtype=np.int8)}
        return out, skipped_obs + skipped_actions

    def save(self, name: str, *, storage_left: int | None = None) -> dict:
        """Write the steps as a compressed ``.npz`` under ``name`` in the default storage; return the Episode fields
        to record: ``steps_file`` and ``steps_meta`` (``bytes``, ``steps``, ``fps``, ``keys``, ``skipped``, ``writeMs``), or
        only ``steps_meta`` with an ``error`` when writing failed or the file is larger than ``storage_left`` bytes
        of the organization's quota, or the recording stopped (:attr:`stopped`: ``stoppedAtStep`` too; lost steps
        never lose the episode)."""
        if self.stopped is not None:
            return {"steps_meta": {"error": f"not recorded: {self.stopped['reason']}",
                                   "stoppedAtStep": self.stopped["atStep"]}}
        started = time.perf_counter()
        try:
            arrays, skipped = self.arrays()
            buffer = io.BytesIO()
            np.savez_compressed(buffer, **arrays)
            data = buffer.getvalue()
            meta = {"bytes": len(data), "steps": len(self.rewards), "fps": self.fps, "keys": sorted(arrays),
                    "skipped": skipped}
            if storage_left is not None and len(data) > storage_left:
                return {"steps_meta": {**meta, "error": "not stored: the organization's storage quota is used up "
                                       "(RLMESH_ORG_STORAGE_QUOTA_BYTES)"}}
            if default_storage.exists(name):  # left by a delivery that stopped before recording the episode
                default_storage.delete(name)
            stored = default_storage.save(name, ContentFile(data, name=name.rpartition("/")[2]))
        except Exception as exc:  # noqa: BLE001 - see the docstring
            logger.exception("writing the steps %s failed", name)
            return {"steps_meta": {"error": f"writing the steps failed: {type(exc).__name__}: {exc}"}}
        meta["writeMs"] = round((time.perf_counter() - started) * 1000, 1)
        return {"steps_file": stored, "steps_meta": meta}


def load_steps(fh) -> dict[str, np.ndarray]:
    """The arrays of a recorded steps file (an open binary file or a path), without pickles."""
    with np.load(fh, allow_pickle=False) as npz:
        return {key: npz[key] for key in npz.files}
