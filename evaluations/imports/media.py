"""Episode videos in a bundle: every media row checked against the archive, the chosen MP4 per episode read for its
codec and copied into Django's storage (the copied names are recorded so a failed import can delete them)."""

from __future__ import annotations

import os
import re
import struct
import tempfile
import zipfile
from dataclasses import dataclass

from django.core.files import File

from ..models import Episode
from .archive import CHUNK, READ_ERRORS, fail, read_head, unsafe_name
from .checks import MAX_UINT32, Checker, type_name

__all__ = ["Video", "episode_video", "mp4_codec", "store_videos"]

VIDEO_FORMATS = ("mp4",)
MP4_CODECS = {"av01": "av1", "avc1": "h264", "avc3": "h264", "hvc1": "hevc", "hev1": "hevc", "vp09": "vp9", "mp4v": "mpeg4"}
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class Video:
    member: zipfile.ZipInfo
    path: str  # bundle-relative, as in result.json
    fmt: str
    camera: str
    meta: dict


def _media_row(row, mpath: str, *, archive, members, root: str, check: Checker) -> Video | bool:
    """Check one media row against the archive: the Video to consider storing, True for a valid row of another kind
    or format (checked, not stored), False for a row with problems (added to ``check``)."""
    if not isinstance(row, dict):
        check.add(mpath, f"must be an object, got {type_name(row)}")
        return False
    before = len(check.errors)
    kind = check.string(row, "kind", mpath, max_length=32)
    rel = check.string(row, "path", mpath, max_length=1000)
    fmt = check.string(row, "format", mpath, required=False, max_length=16)
    camera = check.string(row, "camera", mpath, required=False, max_length=128) or "default"
    meta = {}
    for key, name in (("frameCount", "frames"), ("width", "width"), ("height", "height")):
        value = check.integer(row, key, mpath, low=0, high=MAX_UINT32, required=False, nullable=True)
        if value is not None:
            meta[name] = value
    fps = check.number(row, "fps", mpath, required=False, low=0)
    if fps is not None:
        meta["fps"] = fps
    if len(check.errors) > before or rel is None:
        return False
    problem = unsafe_name(rel)
    info = None if problem else members.get(root + rel)
    if problem or info is None:
        check.add(f"{mpath}.path", problem or f"{rel} is not in the bundle")
        return False
    fmt = (fmt or os.path.splitext(rel)[1].lstrip(".")).lower()
    if kind != "video" or fmt not in VIDEO_FORMATS:
        return True
    if not looks_like(fmt, read_head(archive, info)):
        check.add(f"{mpath}.path", f"{rel} is not an MP4 file (no ftyp box)")
        return False
    return Video(member=info, path=rel, fmt=fmt, camera=camera, meta=meta)


def episode_video(ep: dict, epath: str, *, archive, members, root: str, check: Checker) -> tuple[Video | None, int]:
    """Check every media row of an episode (each must be in the bundle); return the video to store (the ``render``
    camera's, else the first MP4), if any, and how many further valid media rows are not stored."""
    media = ep.get("media", [])
    if media is None:
        return None, 0
    if not isinstance(media, list):
        check.add(f"{epath}.media", f"must be an array, got {type_name(media)}")
        return None, 0
    rows = [_media_row(row, f"{epath}.media[{mi}]", archive=archive, members=members, root=root, check=check)
            for mi, row in enumerate(media)]
    candidates = [r for r in rows if isinstance(r, Video)]
    extra = sum(1 for r in rows if r is True)
    if not candidates:
        return None, extra
    chosen = next((c for c in candidates if c.camera == "render"), candidates[0])
    return chosen, extra + len(candidates) - 1


def looks_like(fmt: str, head: bytes) -> bool:
    """Whether the leading bytes prove the format (an MP4 starts with its ``ftyp`` box)."""
    return fmt == "mp4" and len(head) >= 8 and head[4:8] == b"ftyp"


def mp4_codec(f) -> str | None:
    """The first track's codec (``av1``, ``h264``, …) from the MP4's ``stsd`` box; None if it cannot tell."""

    def boxes(start: int, end: int):
        pos = start
        while pos + 8 <= end:
            f.seek(pos)
            header = f.read(16)
            if len(header) < 8:
                return
            size, kind = struct.unpack(">I4s", header[:8])
            offset = 8
            if size == 1 and len(header) == 16:
                size, offset = struct.unpack(">Q", header[8:16])[0], 16
            elif size == 0:
                size = end - pos
            if size < offset:
                return
            yield kind, pos + offset, pos + size
            pos += size

    try:
        f.seek(0, os.SEEK_END)
        start, stop = 0, f.tell()
        for wanted in (b"moov", b"trak", b"mdia", b"minf", b"stbl", b"stsd"):
            found = next(((s, e) for kind, s, e in boxes(start, stop) if kind == wanted), None)
            if found is None:
                return None
            start, stop = found
        f.seek(start + 8)  # skip version/flags and the entry count; then the first sample entry's size and type
        entry = f.read(8)
    except (OSError, struct.error, ValueError):
        return None
    if len(entry) < 8:
        return None
    fourcc = entry[4:8].decode("latin-1")
    return MP4_CODECS.get(fourcc, fourcc.strip() or None)


def _copy_video(video: Video, *, archive: zipfile.ZipFile, filename: str) -> tuple[str, int, str | None]:
    """Copy one video member into the default storage; return ``(stored name, bytes, codec)``."""
    video_field = Episode._meta.get_field("video")
    with tempfile.SpooledTemporaryFile(max_size=8 * CHUNK) as tmp:
        size = 0
        try:
            with archive.open(video.member) as member:
                while chunk := member.read(CHUNK):
                    size += len(chunk)
                    tmp.write(chunk)
        except READ_ERRORS as exc:
            raise fail(f"bundle:{video.member.filename}", f"cannot be read: {exc}") from None
        codec = mp4_codec(tmp) if video.fmt == "mp4" else None
        tmp.seek(0)
        name = video_field.storage.save(video_field.generate_filename(None, filename), File(tmp, name=filename), max_length=300)
    return name, size, codec


def store_videos(plan, *, archive: zipfile.ZipFile, public_id: str, saved: list[str]) -> None:
    """Copy every chosen video of a :class:`~evaluations.imports.document.BundlePlan` into the default storage and
    set its episode's ``video``/``video_meta``; record the stored names in ``saved`` as they land."""
    for wi, workload in enumerate(plan.workloads):
        for ep in workload.episodes:
            video = ep.video
            if video is None:
                continue
            camera = _UNSAFE_CHARS.sub("_", video.camera).strip("._-")[:40] or "video"
            filename = f"{public_id}-w{wi:03d}-ep{ep.fields['index']:05d}-{camera}.{video.fmt}"
            name, size, codec = _copy_video(video, archive=archive, filename=filename)
            saved.append(name)
            ep.fields["video"] = name
            ep.fields["video_meta"] = {
                "bytes": size, "codec": codec, **video.meta, "format": video.fmt, "camera": video.camera, "bundlePath": video.path,
            }
