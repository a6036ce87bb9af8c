"""The trajectory digest of an episode: one SHA-256 over what went between the driver and the env, step by step.

(task, seed, model, the model's seed) fix an episode; the digest is how the platform shows that they fixed it bit
for bit: the same episode run again (another order, another worker count, a fresh or a used env server, another
host) gives the same 64 hex characters, and any difference in any step gives another.

What is hashed, in order, per step: the observation the action was predicted from (the reset's observation for the
first step), the action sent to the env, then the reward, ``terminated`` and ``truncated`` the env returned for it
(``truncated`` true also at the task's step cap, as rlmesh reports it). Both episode loops (``rlmesh.run``'s hooks
and the explicit session loop) see exactly these, so an episode digests the same whichever loop ran it. Not hashed:

- the observation after the last step (rlmesh's hooks do not report it; the last step's reward and flags are);
- ``info`` (free-form, often timings);
- **image-like arrays** (``uint8`` with 3 or more dimensions: camera frames): only their dtype and shape count, so
  the digest does not depend on the renderer (EGL or OSMesa, GPU or CPU) and stays cheap; the state observations
  that drive the images are hashed.

Canonical byte encoding (``rlmesh-trajectory-v1``): each value is a one-byte tag, then its content, with lengths as
little-endian uint64. Numbers and numpy scalars become 0-d numpy arrays (a Python ``int`` is int64, a ``float``
float64, a ``bool`` bool); an array is its dtype in little-endian form (``<f4``), its shape and its C-order bytes;
a mapping is its items in sorted key order; a list or tuple its items in order; text is UTF-8. So the same values
give the same bytes in any process, on any little- or big-endian host.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["DIGEST_VERSION", "TrajectoryDigest", "encode", "is_image_like"]

#: Names the encoding; hashed first, so a change of encoding changes every digest.
DIGEST_VERSION = b"rlmesh-trajectory-v1"


def _length(n: int) -> bytes:
    return struct.pack("<Q", n)


def is_image_like(array: np.ndarray) -> bool:
    """Whether an array is a camera frame the digest skips: ``uint8`` with ``ndim >= 3`` (H × W × C, or stacks)."""
    return array.dtype == np.uint8 and array.ndim >= 3


def _array(array: np.ndarray, out: list[bytes]) -> None:
    if array.dtype.hasobject:
        out.append(b"l" + _length(array.size) + _length(array.ndim) + b"".join(_length(d) for d in array.shape))
        for item in array.reshape(-1).tolist():
            _encode(item, out)
        return
    little = array.dtype.newbyteorder("<") if array.dtype.byteorder in "=>" else array.dtype
    shape = _length(array.ndim) + b"".join(_length(d) for d in array.shape)
    descr = little.str.encode()
    if is_image_like(array):
        out.append(b"I" + _length(len(descr)) + descr + shape)
        return
    data = np.ascontiguousarray(array, dtype=little).tobytes()
    out.append(b"A" + _length(len(descr)) + descr + shape + _length(len(data)) + data)


def _encode(value: Any, out: list[bytes]) -> None:
    if value is None:
        out.append(b"N")
    elif isinstance(value, np.ndarray):
        _array(value, out)
    elif isinstance(value, (bool, int, float, complex, np.generic)):
        if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
            text = str(value).encode()
            out.append(b"j" + _length(len(text)) + text)  # an int beyond int64, as its decimal text
        else:
            _array(np.asarray(value), out)
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        out.append(b"s" + _length(len(data)) + data)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        out.append(b"b" + _length(len(data)) + data)
    elif isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        out.append(b"d" + _length(len(items)))
        for key, item in items:
            _encode(str(key), out)
            _encode(item, out)
    elif isinstance(value, (list, tuple)):
        out.append(b"l" + _length(len(value)))
        for item in value:
            _encode(item, out)
    else:
        # Anything else numpy can hold (a lazily decoded tensor, a buffer): as its array; else its repr.
        array = np.asarray(value)
        if array.dtype.hasobject:
            text = repr(value).encode()
            out.append(b"r" + _length(len(text)) + text)
        else:
            _array(array, out)


def encode(value: Any) -> bytes:
    """The canonical bytes of ``value`` (see the module docstring): numpy arrays and scalars, Python numbers, text,
    bytes, mappings, lists and tuples, nested; image-like arrays by dtype and shape only."""
    out: list[bytes] = []
    _encode(value, out)
    return b"".join(out)


class TrajectoryDigest:
    """Incremental SHA-256 of one episode's steps; :meth:`step` per env step, :meth:`hexdigest` at the end."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256(DIGEST_VERSION)
        self.steps = 0

    def step(self, observation: Any, action: Any, reward: float, terminated: bool, truncated: bool) -> None:
        """Add one step: the observation the action was predicted from, the action sent, and what the env returned
        (reward as float64, the two flags as booleans)."""
        self._sha.update(b"S" + encode(observation) + encode(action)
                         + encode((float(reward), bool(terminated), bool(truncated))))
        self.steps += 1

    def hexdigest(self) -> str:
        """64 lowercase hex characters; the episode's steps so far (an episode of no step has a digest too)."""
        return self._sha.hexdigest()
