"""Episode videos: which episodes a task records, and H.264 MP4 encoding into Django's storage.

Frames come from the env's ``render()`` (``rgb_array``) or, when it renders nothing, from an image in the
observation (an ``(H, W, 3)`` uint8 array). Encoding uses imageio with its bundled ffmpeg (libx264, yuv420p,
``+faststart`` so the browser can play before the whole file arrived); measured ~0.4 s for 200 CartPole frames
at 600×400 (spec/ENVS.md §5). Only episodes that record pay for rendering: ``first:N`` renders episodes
``< N`` only; ``failures`` must render every episode (success is known only at the end) and keeps the failed ones.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

import numpy as np
from django.core.files import File
from django.core.files.storage import default_storage

__all__ = ["FPS", "RecordBudget", "encode_mp4", "frame_from", "keeps", "leaf_bytes", "playback_fps", "record_images",
           "renders", "save_episode_video", "store_video"]

logger = logging.getLogger(__name__)

#: Playback rate of episode videos (frames per second) of an env that declares none; one frame per env step.
FPS = 30


def playback_fps(metadata) -> int:
    """Frames per second of an env's videos: its declared control rate (Gymnasium's ``metadata["render_fps"]``:
    LIBERO 20, Meta-World 80, the web envs 2), so a video plays in the env's real time; ``FPS`` (30) when it declares
    none or a value outside 1–120."""
    try:
        fps = int(round(float((metadata or {}).get("render_fps"))))
    except (TypeError, ValueError, AttributeError):
        return FPS
    return fps if 1 <= fps <= 120 else FPS


class RecordBudget:
    """The memory one episode's recording may hold: its video frames and recorded steps together, in bytes (the
    arrays' ``nbytes``), at most ``limit`` (``RLMESH_RECORD_MAX_BYTES``). Past it, or when the organization had no
    storage left as the episode began, the recording stops: :attr:`stopped` says at which step and why, the frames
    and steps kept so far are what the episode stores (a video up to there; no steps, since a dataset episode must be
    whole), and the episode itself runs on and counts."""

    def __init__(self, limit: int, *, storage_left: int | None = None):
        self.limit = int(limit)
        self.held = 0
        #: ``{"atStep": n, "reason": "…"}`` once the recording stopped, else None.
        self.stopped: dict | None = None
        if storage_left is not None and storage_left <= 0:
            self.stopped = {"atStep": 0, "reason": "the organization's storage quota was used up as the episode began "
                            "(RLMESH_ORG_STORAGE_QUOTA_BYTES)"}

    def take(self, nbytes: int, step: int) -> bool:
        """Count ``nbytes`` more held at ``step`` (0: the reset); False (and :attr:`stopped` set) when they would pass
        the limit or the recording had already stopped."""
        if self.stopped is not None:
            return False
        if self.held + nbytes > self.limit:
            self.stopped = {"atStep": step, "reason": f"the recording reached RLMESH_RECORD_MAX_BYTES "
                            f"({self.limit / 2**20:.0f} MiB held in memory) at step {step}"}
            return False
        self.held += nbytes
        return True


def leaf_bytes(leaves: dict) -> int:
    """Bytes the leaves of a flattened observation or action hold as arrays (text counts its UTF-8 length)."""
    total = 0
    for value in leaves.values():
        if isinstance(value, str):
            total += len(value.encode())
        else:
            total += int(getattr(value, "nbytes", 8))
    return total


def renders(mode: str, index: int) -> bool:
    """Whether episode ``index`` must collect frames under recording ``mode`` (none|all|failures|first:N)."""
    if mode == "all" or mode == "failures":
        return True
    if mode.startswith("first:"):
        return index < int(mode.split(":", 1)[1])
    return False


def keeps(mode: str, success: bool | None) -> bool:
    """Whether a rendered episode's video is stored: everything except successes under ``failures``."""
    return not (mode == "failures" and success is True)


def frame_from(rendered, observation) -> np.ndarray | None:
    """An ``(H, W, 3)`` uint8 frame: the env's render if it gave one, else the first image in the observation."""
    for candidate in (rendered, observation):
        frame = _image(candidate)
        if frame is not None:
            return frame
    return None


def record_images(rendered, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The images an env rendered for the record, by observation path: ``rendered`` a strip ``(H, len(keys) × W, C)``
    uint8 of equally wide images side by side (rlmesh's ``render()`` carries one image) and ``keys`` their paths
    (``metadata["record_keys"]``), first to last; {} when there are no keys or the render is not such a strip."""
    if not keys or rendered is None:
        return {}
    try:
        strip = np.asarray(rendered)
    except (TypeError, ValueError):
        return {}
    if strip.dtype != np.uint8 or strip.ndim != 3 or strip.shape[1] % len(keys):
        return {}
    width = strip.shape[1] // len(keys)
    return {key: np.ascontiguousarray(strip[:, i * width:(i + 1) * width]) for i, key in enumerate(keys)}


def _image(value) -> np.ndarray | None:
    if value is not None and not isinstance(value, (dict, np.ndarray)) and hasattr(value, "shape"):
        try:
            value = np.asarray(value)  # rlmesh Tensor (buffer protocol) from a non-numpy client
        except (TypeError, ValueError):
            return None
    if isinstance(value, dict):
        for v in value.values():
            if (img := _image(v)) is not None:
                return img
        return None
    if isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 3 and value.shape[-1] in (3, 4):
        return value[..., :3]
    return None


def encode_mp4(frames: list[np.ndarray], *, fps: int = FPS) -> tuple[bytes, dict]:
    """Encode frames (each ``(H, W, 3)`` uint8, same size) as H.264 MP4; returns (bytes, meta).

    ``meta`` = {"codec": "h264", "frames", "fps", "width", "height", "bytes", "encodeMs"}; width and height are
    the frame's, rounded down to even numbers (yuv420p). Raises ValueError on an empty frame list.
    """
    import imageio.v2 as imageio

    if not frames:
        raise ValueError("no frames to encode")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "episode.mp4"
        # yuv420p needs even sides: an odd one loses its last row/column (no rescaling, unlike the default
        # 16-pixel macro-block rule, which would turn 600×400 CartPole frames into 608×400).
        h, w = frames[0].shape[0] & ~1, frames[0].shape[1] & ~1
        writer = imageio.get_writer(
            path, fps=fps, codec="libx264", quality=6, pixelformat="yuv420p", macro_block_size=2,
            output_params=["-movflags", "+faststart"], ffmpeg_log_level="error",
        )
        try:
            for frame in frames:
                writer.append_data(np.ascontiguousarray(frame[:h, :w]))
        finally:
            writer.close()
        data = path.read_bytes()
    meta = {
        "codec": "h264", "frames": len(frames), "fps": fps, "width": int(w), "height": int(h),
        "bytes": len(data), "encodeMs": round((time.perf_counter() - started) * 1000, 1),
    }
    return data, meta


def store_video(name: str, data: bytes) -> str:
    """Save ``data`` under ``name`` in the default storage; returns the stored name (storage may rename)."""
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.seek(0)
        return default_storage.save(name, File(fh, name=Path(name).name))


def save_episode_video(name: str, frames: list, render_ms: float, *, storage_left: int | None = None,
                       fps: int = FPS, stopped: dict | None = None) -> dict:
    """Encode ``frames`` and store them under ``name``; return the Episode fields to record: ``video`` and
    ``video_meta`` (with ``renderMs``), or only ``video_meta`` with an ``error`` when there is nothing to encode,
    encoding failed, or the video is larger than ``storage_left`` bytes of the organization's quota (a lost video
    never loses the episode). ``stopped`` (a :class:`RecordBudget`'s): the frames end where the recording stopped,
    and ``video_meta`` says so (``stoppedAtStep``, ``note``)."""
    if stopped is not None:
        partial = {"stoppedAtStep": stopped["atStep"], "note": f"the video ends at step {stopped['atStep']}: "
                   f"{stopped['reason']}"}
        if not frames:
            return {"video_meta": {**partial, "error": f"not recorded: {stopped['reason']}"}}
        fields = save_episode_video(name, frames, render_ms, storage_left=storage_left, fps=fps)
        fields["video_meta"].update(partial)
        return fields
    if not frames:
        return {"video_meta": {"error": "the env rendered no frames and its observation holds no image"}}
    try:
        data, meta = encode_mp4(frames, fps=fps)
        if storage_left is not None and len(data) > storage_left:
            return {"video_meta": {**meta, "error": "not stored: the organization's storage quota is used up "
                                   "(RLMESH_ORG_STORAGE_QUOTA_BYTES)"}}
        stored = store_video(name, data)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        logger.exception("encoding the video %s failed", name)
        return {"video_meta": {"error": f"encoding failed: {type(exc).__name__}: {exc}"}}
    return {"video": stored, "video_meta": {**meta, "renderMs": round(render_ms, 1)}}
