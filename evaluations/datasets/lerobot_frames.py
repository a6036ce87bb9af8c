"""Recorded steps (:mod:`evaluations.runs.steps`) as LeRobot features and frames. NumPy only, no Django: the writer
imports it on the lerobot venv's interpreter and the platform on its own.

The observation keys follow LeRobot's ``preprocess_observation`` (``lerobot/envs/utils.py``, 0.4.4), so a policy
trained on the dataset reads the keys it reads from the env:

- ``pixels.<name>`` → ``observation.images.<name>`` (LIBERO: ``image``, ``image2``); ``pixels`` alone →
  ``observation.image``; any other ``(H, W, 3)`` uint8 leaf → ``observation.images.<its last key>`` (Meta-World's
  ``image``);
- ``agent_pos`` → ``observation.state``; without it, a numeric 1-D ``state`` leaf (Meta-World) or a plain array
  observation (a numeric vector; a plain image becomes ``observation.image``);
- ``environment_state`` → ``observation.environment_state``;
- other leaves (LIBERO's ``privileged`` poses, text) are not exported; a text leaf named like an instruction
  (:data:`INSTRUCTION_KEYS`) is each frame's ``task``.

Frame ``t`` (``0 ≤ t < steps``) is the observation the env returned before step ``t`` (the reset's for ``t = 0``),
the action the env received at step ``t``, and what that step returned: ``next.reward`` (float32), ``next.done``
(terminated or truncated) and ``next.success`` (the step's ``info`` success flag). The final observation (after the
last step) has no action and is not a frame, so an episode of ``steps`` steps has ``steps`` frames.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator

import numpy as np

__all__ = ["IMAGE_MODES", "INSTRUCTION_KEYS", "MappingProblem", "check_steps_file", "feature_map", "features", "frames", "header_arrays",
           "instruction", "shape_differences"]

OBS = "obs/"
#: How images are stored: ``image`` (PNG inside the parquet files: exact) or ``video`` (AV1 MP4, lossy, smaller).
IMAGE_MODES = ("image", "video")
#: Text leaves that hold the episode's language instruction, in order of preference (as ``prebuilt/smolvla`` reads).
INSTRUCTION_KEYS = ("task", "instruction", "language_instruction", "task_description", "prompt")
#: Frame keys besides the observations and the action.
NEXT_FEATURES = {
    "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
    "next.done": {"dtype": "bool", "shape": (1,), "names": None},
    "next.success": {"dtype": "bool", "shape": (1,), "names": None},
}


class MappingProblem(ValueError):
    """Recorded steps that make no LeRobot frame (no image nor state, no vector action), in words for the user."""


def _is_image(array: np.ndarray) -> bool:
    """Whether a stacked leaf ``(T, H, W, 3)`` is an image sequence."""
    return array.dtype == np.uint8 and array.ndim == 4 and array.shape[-1] == 3


def _is_vector(array: np.ndarray) -> bool:
    return array.dtype.kind in "fiub" and array.ndim == 2


def feature_map(arrays: dict[str, np.ndarray]) -> dict[str, str]:
    """LeRobot feature name → recorded member (``obs/…``) for the observations (module docstring). Raises
    MappingProblem when no leaf maps to an image or a state."""
    leaves = {k[len(OBS):]: v for k, v in arrays.items() if k.startswith(OBS)}
    out: dict[str, str] = {}
    for path, array in leaves.items():
        last = path.rpartition(".")[2]
        if path == "pixels" and _is_image(array):
            out["observation.image"] = OBS + path
        elif path.startswith("pixels.") and path.count(".") == 1 and _is_image(array):
            out[f"observation.images.{last}"] = OBS + path
        elif path == "agent_pos" and _is_vector(array):
            out["observation.state"] = OBS + path
        elif path == "environment_state" and _is_vector(array):
            out["observation.environment_state"] = OBS + path
    for path, array in leaves.items():  # the fallbacks, where LeRobot's names left a place empty
        last = path.rpartition(".")[2] or "image"
        if _is_image(array) and not path.startswith("pixels") and f"observation.images.{last}" not in out:
            out[f"observation.images.{last}"] = OBS + path
        elif path in ("state", "") and _is_vector(array) and "observation.state" not in out:
            out["observation.state"] = OBS + path
        elif path == "" and _is_image(array) and "observation.image" not in out:
            out["observation.image"] = OBS + path
    if not out:
        raise MappingProblem(f"the recorded observations hold no image nor state LeRobot reads (pixels, agent_pos, "
                             f"environment_state, state, or an (H, W, 3) uint8 image); they hold {sorted(leaves)}")
    return dict(sorted(out.items()))


def _actions(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """``(steps, A)`` float32: the action, or a dict action's numeric leaves concatenated in recorded order."""
    if "action" in arrays:
        parts = [arrays["action"]]
    else:
        parts = [v for k, v in arrays.items() if k.startswith("action/")]
    steps = len(arrays["reward"])
    if not parts or any(p.dtype.kind not in "fiub" for p in parts):
        raise MappingProblem("the recorded actions are not numeric arrays; LeRobot's `action` is a vector")
    return np.concatenate([p.reshape(steps, -1) for p in parts], axis=1).astype(np.float32)


def features(arrays: dict[str, np.ndarray], *, images: str = "image") -> dict[str, dict]:
    """The ``features`` argument of ``LeRobotDataset.create`` for one recorded episode: observations
    (:func:`feature_map`; images with dtype ``images``: ``image``, PNG in the parquet files, or ``video``),
    ``action`` (float32), and :data:`NEXT_FEATURES`."""
    out: dict[str, dict] = {}
    for name, member in feature_map(arrays).items():
        array = arrays[member]
        if _is_image(array):
            out[name] = {"dtype": images, "shape": tuple(array.shape[1:]), "names": ["height", "width", "channel"]}
        else:
            out[name] = {"dtype": "float32", "shape": (array.shape[1],), "names": None}
    out["action"] = {"dtype": "float32", "shape": (_actions(arrays).shape[1],), "names": None}
    return {**out, **NEXT_FEATURES}


def header_arrays(fh) -> dict[str, np.ndarray]:
    """A recorded steps ``.npz`` (an open binary file or a path) as stand-ins of its arrays: each member's shape and
    dtype read from its ``.npy`` header only, its values a broadcast zero (no memory, nothing decompressed past the
    header), enough for :func:`features`. Raises ValueError for a file that is not such an ``.npz`` (not a zip, a
    member that is not an ``.npy``, a truncated or corrupt one)."""
    out = {}
    try:
        with zipfile.ZipFile(fh) as archive:
            for name in archive.namelist():
                with archive.open(name) as member:
                    version = np.lib.format.read_magic(member)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read(member)
                out[name.removesuffix(".npy")] = np.broadcast_to(np.zeros((), dtype=dtype), shape)
    except ValueError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, TypeError) as exc:
        raise ValueError(f"not a steps file: {type(exc).__name__}: {exc}") from exc
    return out


def check_steps_file(path) -> None:
    """Raise ValueError unless the ``.npz`` at ``path`` is whole: a zip whose every member is an ``.npy`` and passes
    its CRC check (decompresses every member once; nothing is kept)."""
    header_arrays(path)
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}") from exc
    if bad is not None:
        raise ValueError(f"member {bad} fails its CRC check")


def shape_differences(a: dict[str, dict], b: dict[str, dict]) -> dict[str, tuple[str, str]]:
    """The features of two :func:`features` specs that differ: name → (``a``'s, ``b``'s) as ``"float32 (4,)"``, or
    ``"absent"``."""
    def spell(spec: dict | None) -> str:
        return f"{spec['dtype']} {tuple(spec['shape'])}" if spec else "absent"

    return {k: (spell(a.get(k)), spell(b.get(k))) for k in sorted({*a, *b}) if spell(a.get(k)) != spell(b.get(k))}


def instruction(arrays: dict[str, np.ndarray]) -> str | None:
    """The instruction the first observation carries (a text leaf named in :data:`INSTRUCTION_KEYS`), or None."""
    texts = {k[len(OBS):].rpartition(".")[2]: v for k, v in arrays.items() if k.startswith(OBS) and v.dtype.kind == "U"}
    for key in INSTRUCTION_KEYS:
        if key in texts and texts[key].size and str(texts[key].reshape(-1)[0]).strip():
            return str(texts[key].reshape(-1)[0])
    return None


def frames(arrays: dict[str, np.ndarray], task: str) -> Iterator[dict]:
    """The ``add_frame`` dicts of one recorded episode, frame ``t`` as the module docstring says; ``task`` is the
    frame's task unless the observation carries an instruction of its own (:func:`instruction`)."""
    mapping = feature_map(arrays)
    actions = _actions(arrays)
    steps = len(arrays["reward"])
    done = arrays["terminated"] | arrays["truncated"]
    text = task
    for t in range(steps):
        frame = {}
        for name, member in mapping.items():
            value = arrays[member][t]
            frame[name] = value if _is_image(arrays[member]) else value.astype(np.float32)
        frame["action"] = actions[t]
        frame["next.reward"] = np.asarray([arrays["reward"][t]], dtype=np.float32)
        frame["next.done"] = np.asarray([bool(done[t])])
        frame["next.success"] = np.asarray([arrays["success"][t] == 1])
        own = instruction({k: v[t:t + 1] for k, v in arrays.items() if k.startswith(OBS) and v.dtype.kind == "U"})
        frame["task"] = own or text
        yield frame
