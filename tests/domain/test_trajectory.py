"""The trajectory digest's canonical encoding: same values → same bytes whatever their container or byte order;
any difference that matters → other bytes; camera frames by dtype and shape only."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np

from evaluations.domain.trajectory import DIGEST_VERSION, TrajectoryDigest, encode, is_image_like

ROOT = Path(__file__).resolve().parents[2]


def _digest(steps) -> str:
    d = TrajectoryDigest()
    for step in steps:
        d.step(*step)
    return d.hexdigest()


def _episode(obs_dtype=np.float32, reward=1.0):
    rng = np.random.default_rng(7)
    return [({"agent_pos": rng.normal(size=8).astype(obs_dtype), "instruction": "open the drawer"},
             rng.uniform(-1, 1, size=7).astype(np.float32), reward, False, i == 4) for i in range(5)]


def test_the_digest_is_a_sha256_over_the_version_and_the_encoded_steps():
    obs, action = np.arange(4, dtype=np.float32), 1
    expected = hashlib.sha256(DIGEST_VERSION + b"S" + encode(obs) + encode(action) + encode((1.0, False, True)))
    assert _digest([(obs, action, 1.0, False, True)]) == expected.hexdigest()
    assert TrajectoryDigest().hexdigest() == hashlib.sha256(DIGEST_VERSION).hexdigest()


def test_dict_key_order_does_not_matter_but_values_do():
    a = {"b": np.ones(2), "a": {"y": 1, "x": "t"}}
    b = {"a": {"x": "t", "y": 1}, "b": np.ones(2)}
    assert encode(a) == encode(b)
    assert encode(a) != encode({"a": {"x": "t", "y": 2}, "b": np.ones(2)})
    assert encode({"a": 1}) != encode({"b": 1})


def test_dtype_shape_and_byte_order_are_part_of_an_array_but_the_host_byte_order_is_not():
    x = np.arange(6, dtype=np.float32)
    assert encode(x) != encode(x.astype(np.float64))
    assert encode(x) != encode(x.reshape(2, 3))
    assert encode(x) == encode(x.astype(">f4"))  # the same values stored big-endian
    assert b"<f4" in encode(x)
    assert encode(np.asfortranarray(np.arange(6.0).reshape(2, 3))) == encode(np.arange(6.0).reshape(2, 3))
    assert encode(x[::2]) == encode(np.array([0, 2, 4], dtype=np.float32))


def test_scalars_are_canonical_whatever_their_python_or_numpy_type():
    assert encode(1) == encode(np.int64(1)) == encode(np.array(1))
    assert encode(0.5) == encode(np.float64(0.5))
    assert encode(True) == encode(np.bool_(True))
    assert encode(True) != encode(1)
    assert encode(np.float32(0.5)) != encode(0.5)
    assert encode(2**70) != encode(2**70 + 1)
    assert encode([1, 2]) == encode((1, 2)) != encode([2, 1])
    assert encode("a") != encode(b"a")
    assert encode(None) != encode(0) != encode("")


def test_image_like_arrays_count_by_dtype_and_shape_only():
    frame = np.zeros((256, 256, 3), np.uint8)
    other = np.full((256, 256, 3), 200, np.uint8)
    assert is_image_like(frame) and not is_image_like(np.zeros((4, 4), np.uint8))
    assert not is_image_like(np.zeros((4, 4, 3), np.float32))
    assert encode({"pixels": {"image": frame}}) == encode({"pixels": {"image": other}})
    assert encode(frame) != encode(np.zeros((128, 128, 3), np.uint8))
    assert len(encode(frame)) < 100
    # a uint8 array of 2 dims is state, not a frame: hashed in full
    assert encode(np.zeros((4, 4), np.uint8)) != encode(np.ones((4, 4), np.uint8))


def test_any_change_in_any_step_changes_the_digest():
    base = _episode()
    reference = _digest(base)
    assert _digest(_episode()) == reference
    variants = {
        "observation": [(dict(o, agent_pos=o["agent_pos"] + (i == 3) * 1e-7), a, r, t, u)
                        for i, (o, a, r, t, u) in enumerate(base)],
        "action": [(o, a + (i == 2) * np.float32(1e-6), r, t, u) for i, (o, a, r, t, u) in enumerate(base)],
        "reward": [(o, a, r + (i == 1) * 1e-9, t, u) for i, (o, a, r, t, u) in enumerate(base)],
        "terminated": [(o, a, r, t or i == 4, u) for i, (o, a, r, t, u) in enumerate(base)],
        "truncated": [(o, a, r, t, u and i != 4) for i, (o, a, r, t, u) in enumerate(base)],
        "one step fewer": base[:-1],
        "order": [base[1], base[0], *base[2:]],
        "obs dtype": _episode(obs_dtype=np.float64),
    }
    for name, steps in variants.items():
        assert _digest(steps) != reference, name


def test_a_numpy_reward_digests_as_the_python_float():
    assert _digest(_episode(reward=np.float64(1.0))) == _digest(_episode(reward=1.0))
    assert _digest(_episode(reward=np.float32(0.1))) == _digest(_episode(reward=float(np.float32(0.1))))


def test_another_process_gets_the_same_digest():
    code = ("import numpy as np; from evaluations.domain.trajectory import TrajectoryDigest as T; d = T(); "
            "d.step({'x': np.arange(3, dtype=np.float32), 's': 'go'}, np.array([0.5, -1.0]), 1.5, False, True); "
            "print(d.hexdigest())")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "123"}).stdout.strip()
    here = _digest([({"s": "go", "x": np.arange(3, dtype=np.float32)}, np.array([0.5, -1.0]), 1.5, False, True)])
    assert out == here
