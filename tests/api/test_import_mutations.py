"""Malformed bundles: a few hundred mutations of the real fixture bundle, each sent as a multipart upload and as a raw
zip body, answer a 400 ``invalid_bundle`` (or, when the mutation happens to leave a readable bundle, a complete
import) and never a 500 or a half-written import.

The mutations are deterministic: truncations (the first N bytes and the last N bytes, at many offsets), byte flips
in the local file headers and in the central directory (every byte of the first member's header and record and of
the end record, every third byte of the others), member names made invalid UTF-8 or control characters, and compression
methods zipfile cannot read.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluations.models import Episode, Evaluation, Workload

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "cartpole_result_bundle.zip"
LOCAL_HEADER = 30
CENTRAL_HEADER = 46
END_RECORD = 22


def _layout(data: bytes) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int]:
    """(offset, length) of each local header with its name, of each central-directory record, and the end record's
    offset."""
    with zipfile.ZipFile(__import__("io").BytesIO(data)) as z:
        infos = z.infolist()
        start_dir = z.start_dir
    local = [(i.header_offset, LOCAL_HEADER + len(i.orig_filename.encode())) for i in infos]
    central, pos = [], start_dir
    for _ in infos:
        name_len, extra_len, comment_len = struct.unpack("<HHH", data[pos + 28:pos + 34])
        length = CENTRAL_HEADER + name_len + extra_len + comment_len
        central.append((pos, length))
        pos += length
    return local, central, len(data) - END_RECORD


def _flip(data: bytes, at: int, mask: int = 0xFF) -> bytes:
    return data[:at] + bytes([data[at] ^ mask]) + data[at + 1:]


def _put(data: bytes, at: int, value: bytes) -> bytes:
    return data[:at] + value + data[at + len(value):]


def mutations() -> dict[str, bytes]:
    """Name → mutated bundle bytes; every mutation differs from the fixture and from each other."""
    data = FIXTURE.read_bytes()
    size = len(data)
    local, central, end = _layout(data)
    out: dict[str, bytes] = {}
    for n in sorted({*range(1, size, size // 60), *(end + k for k in range(END_RECORD)), *(o + k for o, _ in local for k in (1, 29))}):
        out[f"first {n} bytes"] = data[:n]
    for n in range(size // 50, size, size // 40):
        out[f"last {n} bytes"] = data[-n:]
    for mi, (offset, length) in enumerate(local):
        for k in range(0, length, 1 if mi == 0 else 3):
            out[f"local header {mi} byte {k} flipped"] = _flip(data, offset + k)
    for ci, (offset, length) in enumerate(central):
        for k in range(0, length, 1 if ci == 0 else 3):
            out[f"central record {ci} byte {k} flipped"] = _flip(data, offset + k)
        name_at = offset + CENTRAL_HEADER
        out[f"central record {ci}: invalid UTF-8 name"] = _put(_put(data, offset + 8, struct.pack("<H", 0x800)), name_at, b"\xff\xfe")
        out[f"central record {ci}: control character in name"] = _put(data, name_at, b"\x01")
        for method in (1, 6, 9, 12, 14, 98, 99, 0xFFFF):
            out[f"central record {ci}: compression method {method}"] = _put(data, offset + 10, struct.pack("<H", method))
    for k in range(END_RECORD):
        out[f"end record byte {k} flipped"] = _flip(data, end + k)
    for field, at in (("entries on disk", 8), ("entries", 10), ("directory size", 12), ("directory offset", 16)):
        for value in (0, 1, 0xFFFF):
            out[f"end record {field} = {value}"] = _put(data, end + at, struct.pack("<H", value))
    return {name: body for name, body in out.items() if body != data}


def _snapshot(media_root: Path) -> tuple:
    files = sorted(p for p in media_root.rglob("*") if p.is_file()) if media_root.exists() else []
    return Evaluation.objects.count(), Workload.objects.count(), Episode.objects.count(), files


def _send(api, body: bytes, how: str):
    if how == "multipart":
        return api.post("/v1/evaluations/imports", {"bundle": SimpleUploadedFile("run.zip", body, "application/zip")}, format="multipart")
    return api.generic("POST", "/v1/evaluations/imports", body, content_type="application/zip")


def _check_complete(r, before: tuple, after: tuple) -> None:
    """A 201 is a whole import: one evaluation, its workloads and every episode it counts, a file per video."""
    evaluation = Evaluation.objects.get(public_id=r.json()["id"])
    episodes = list(evaluation.episodes.all())
    assert after[0] == before[0] + 1 and after[1] == before[1] + evaluation.workloads.count()
    assert len(episodes) == evaluation.total_episodes == after[2] - before[2] > 0
    assert len(after[3]) - len(before[3]) == sum(1 for e in episodes if e.video) == evaluation.config["import"]["videos"]


@pytest.mark.parametrize("how", ["multipart", "raw"])
def test_every_mutated_bundle_is_a_400_or_a_complete_import(api, settings, tmp_path, monkeypatch, how):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"imports": "100000/m"})
    settings.MEDIA_ROOT = tmp_path / "media"
    cases = mutations()
    assert len(cases) > 400
    outcomes: dict[int, int] = {}
    failures: list = []
    for name, body in cases.items():
        before = _snapshot(settings.MEDIA_ROOT)
        r = _send(api, body, how)
        after = _snapshot(settings.MEDIA_ROOT)
        outcomes[r.status_code] = outcomes.get(r.status_code, 0) + 1
        if r.status_code >= 500:
            failures.append((name, r.content[:300]))
            continue
        if r.status_code == 201:
            _check_complete(r, before, after)
            continue
        assert r.status_code == 400, (name, r.status_code, r.content[:500])
        error = r.json()["error"]
        assert error["code"] == "invalid_bundle", (name, error)
        assert all(d["path"].startswith(("bundle", "result.json$")) for d in error["details"]), (name, error)
        assert after == before, (name, "half-written")
    assert not failures, (len(failures), failures[:20])
    assert outcomes.get(400, 0) > len(cases) // 2, outcomes
