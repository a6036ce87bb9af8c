"""Import local runs: turn an ``rlmesh.result.v1`` bundle written by ``rlmesh.Recorder`` into a completed evaluation.

The bundle (rlmesh 0.1.0, ``Recorder.export("x.zip")``; ``tests/fixtures/make_result_bundle.py`` makes one) is a
zip of ``result.json`` plus the media it references::

    result.json                                         the rlmesh.result.v1 document (below)
    media/w000-<model>/<task>/ep00000/render.mp4        AV1 MP4 of the env's render(), one per episode and camera

    {"schema": "rlmesh.result.v1", "resultSetId": "<hex>", "recordedAt": "<ISO 8601>",
     "workloads": [{"model": str, "env": str, "task": str, "config": {free-form caller metadata},
                    "numEpisodes": int, "metrics": {"meanReward", "successRate", "totalSteps"},
                    "episodes": [{"index": int, "seed": int|null, "steps": int, "reward": float,
                                  "terminated": bool, "truncated": bool, "success": bool|null,
                                  "durationS": float (seconds), "includedInMetrics": bool,
                                  "media": [{"camera", "kind": "video", "path", "format": "mp4",
                                             "frameCount", "width", "height", "fps"}]}]}]}

A zip of the exported *folder* (everything under one top-level directory) is accepted too. Each bundle workload
becomes one Workload (model × env × task; no image versions), each episode one Episode, and each episode's
first MP4 ``video`` (the ``render`` camera when there is one) is copied into ``Episode.video`` through Django's
default storage. The per-workload ``metrics`` are recomputed by the platform, never trusted.

Success: the episode's ``success`` (the env's own flag, as rlmesh reports it) → source ``env``; else the
platform criterion in the workload's ``config.successCriterion`` (``{"kind": "survived" | "terminated" |
"return_at_least", "threshold": x}``) → ``criterion``; else ``terminated``. ``config.maxEpisodeSteps`` (the
``rlmesh.run`` cap) marks a truncation at that many steps as ``max_steps``. Episodes with
``includedInMetrics: false`` (warm-ups) are not imported; unseeded episodes (``seed: null``) are stored with
seed ``-1``. Both are reported in the evaluation's warnings.

Error paths (``details[].path`` of the 400 envelope) name where the problem is:

- ``bundle``: the upload as a whole (not a zip, too large, too many members, encrypted);
- ``bundle:<member>``: one zip member, by its name as stored (``bundle:../../etc/passwd``, ``bundle:result.json``);
- ``result.json$<JSONPath>``: a value inside result.json, e.g. ``result.json$.workloads[0].episodes[3].reward``
  (``result.json$`` is the document itself).

Nothing is written unless the whole bundle is valid: every check runs before the first write, media are
copied to storage before the one database transaction, and copied files are deleted if anything fails.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import math
import os
import re
import struct
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..choices import EpisodeStatus, EvaluationStatus, StopCondition
from ..models import ApiKey, Episode, Evaluation, Organization, Workload
from ..models.evaluations import new_public_id
from ..scoring import episode_success, split_task_id
from .evaluations import log
from .planning import MAX_JSON_DEPTH, RequestInvalid, _check_json_values

__all__ = ["BundleInvalid", "import_bundle"]

logger = logging.getLogger(__name__)

SCHEMA = "rlmesh.result.v1"
RESULT_FILENAME = "result.json"
#: result.json is parsed in memory: it may be at most this large (100,000 episodes take about 40 MB).
MAX_RESULT_JSON_BYTES = 64 * 1024 * 1024
#: Seed stored for an episode the bundle recorded without one (gymnasium seeds are never negative).
UNSEEDED = -1
#: rlmesh's built-in episode step bound (as in services/execution.py).
STEP_BOUND = 100_000
#: Largest values the Episode/Workload columns hold.
MAX_UINT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1
#: Stop after this many problems; the first ones say enough.
MAX_ERRORS = 50
#: Video formats stored into Episode.video (served as video/mp4); other media rows are checked but not stored.
VIDEO_FORMATS = ("mp4",)
CRITERION_KINDS = ("survived", "terminated", "return_at_least")
MP4_CODECS = {"av01": "av1", "avc1": "h264", "avc3": "h264", "hvc1": "hevc", "hev1": "hevc", "vp09": "vp9", "mp4v": "mpeg4"}
_DRIVE = re.compile(r"^[A-Za-z]:")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
CHUNK = 1024 * 1024


class BundleInvalid(RequestInvalid):
    """A bundle that cannot be imported; ``errors`` is ``[{"path", "message"}]`` (paths: see the module doc)."""

    def __init__(self, errors: list[dict], *, code: str = "invalid_bundle", status: int = 400):
        super().__init__(errors, code=code, status=status)


def _fail(path: str, message: str, **kwargs) -> BundleInvalid:
    return BundleInvalid([{"path": path, "message": message}], **kwargs)


# ----------------------------------------------------------------- the plan
@dataclass
class _Video:
    member: zipfile.ZipInfo
    path: str  # bundle-relative, as in result.json
    fmt: str
    camera: str
    meta: dict


@dataclass
class _Episode:
    fields: dict
    video: _Video | None = None


@dataclass
class _Workload:
    fields: dict
    config: dict
    episodes: list[_Episode] = field(default_factory=list)


@dataclass
class _Plan:
    doc: dict
    workloads: list[_Workload]
    recorded_at: Any
    warnings: list[str]
    skipped: int = 0
    unseeded: int = 0
    by_terminated: int = 0
    extra_media: int = 0


# ------------------------------------------------------------------ entry
def import_bundle(
    fileobj: IO[bytes], *, organization: Organization, user=None, api_key: ApiKey | None = None, name: str = ""
) -> Evaluation:
    """Validate an ``rlmesh.result.v1`` bundle (a seekable binary file of a zip) and import it.

    Creates one ``completed`` Evaluation (``origin="import"``, no shards) with a Workload per bundle
    workload, an Episode per imported episode and its video in ``Episode.video``; returns it. Episodes keep
    the bundle's index, seed, steps, reward (undiscounted return), terminated and truncated; ``durationS``
    (seconds) becomes ``wall_ms`` (milliseconds); ``started_at`` is unknown (None, so ``/metrics`` reports no
    throughput) and ``finished_at`` is the bundle's ``recordedAt``. ``video_meta`` holds ``bytes``, ``codec``
    (read from the MP4, e.g. ``av1``), ``frames``, ``width``, ``height``, ``fps``, ``camera``. ``name``
    defaults to "Import of <file name>" (``fileobj.name``). ``request_raw``/``request`` hold result.json
    verbatim when it is at most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes (the limit of a submitted request),
    else the document with every workload's ``episodes`` replaced by ``[]`` and ``episodesOmitted``.
    ``config["import"]`` records the file name, its size (bytes) and sha256, the schema, resultSetId,
    recordedAt and the rlmesh version (``rlmeshVersion`` if the bundle has one; rlmesh 0.1.0 writes none).

    Raises BundleInvalid (a RequestInvalid; 400, or 413 for an upload over ``RLMESH_IMPORT_MAX_BYTES``) with
    the path of every problem found; nothing is then written to the database or to storage.
    """
    max_bytes = settings.RLMESH_IMPORT_MAX_BYTES
    file_name = _clean_file_name(getattr(fileobj, "name", "") or "")
    size, sha256 = _measure(fileobj, limit=max_bytes)
    if size > max_bytes:
        raise _fail("bundle", f"the upload is larger than {max_bytes} bytes (the limit)", code="payload_too_large", status=413)
    if size == 0:
        raise _fail("bundle", "the upload is empty; send the .zip that rlmesh.Recorder.export() wrote")
    try:
        archive = zipfile.ZipFile(fileobj)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise _fail("bundle", f"not a zip archive ({exc}); send the .zip that rlmesh.Recorder.export() wrote") from None
    with archive:
        members, root = _check_members(archive, max_bytes=max_bytes)
        raw = _read_member(archive, members[root + RESULT_FILENAME], limit=MAX_RESULT_JSON_BYTES)
        doc = _parse_result(raw)
        plan = _validate(doc, archive=archive, members=members, root=root)
        previous = (
            Evaluation.objects.for_org(organization).filter(origin="import", config__import__sha256=sha256)
            .values_list("public_id", flat=True).first()
        )
        if previous:
            plan.warnings.append(f"this bundle (same sha256) was imported before as {previous}")
        public_id = new_public_id()
        storage = Episode._meta.get_field("video").storage
        saved: list[str] = []
        try:
            _store_videos(plan, archive=archive, public_id=public_id, saved=saved)
            return _write(
                plan, raw=raw, public_id=public_id, organization=organization, user=user, api_key=api_key,
                name=name, file_name=file_name, size=size, sha256=sha256,
            )
        except BaseException:
            for stored in saved:
                try:
                    storage.delete(stored)
                except Exception:  # noqa: BLE001 - best effort; the original error matters more
                    logger.warning("import %s: could not delete %s after a failed import", public_id, stored)
            raise


# -------------------------------------------------------------- the archive
def _clean_file_name(value: str) -> str:
    base = os.path.basename(str(value).replace("\\", "/"))
    return "".join(ch for ch in base if ch.isprintable())[:200]


def _measure(fileobj: IO[bytes], *, limit: int) -> tuple[int, str]:
    """Size in bytes and sha256 of the whole file (reading stops past ``limit``); rewinds it."""
    digest = hashlib.sha256()
    size = 0
    fileobj.seek(0)
    while chunk := fileobj.read(CHUNK):
        size += len(chunk)
        if size > limit:
            break
        digest.update(chunk)
    fileobj.seek(0)
    return size, digest.hexdigest()


def _unsafe_name(name: str) -> str | None:
    """Why a member name could escape the bundle (absolute, a drive, backslashes, ``..``), or None."""
    if name.startswith("/") or _DRIVE.match(name):
        return "is an absolute path; members must be relative to the bundle"
    if "\\" in name:
        return "contains a backslash; members must use / separators"
    if ".." in name.split("/"):
        return "contains '..' (path traversal)"
    if any(not ch.isprintable() for ch in name):
        return "contains control characters"
    return None


def _check_members(archive: zipfile.ZipFile, *, max_bytes: int) -> tuple[dict[str, zipfile.ZipInfo], str]:
    """The file members by name, and the bundle root ("" or "<folder>/"); BundleInvalid for an unsafe archive."""
    infos = archive.infolist()
    max_members = settings.RLMESH_IMPORT_MAX_MEMBERS
    if len(infos) > max_members:
        raise _fail("bundle", f"has {len(infos)} members; the limit is {max_members}")
    files: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        name = info.filename
        problem = _unsafe_name(name)
        if problem:
            raise _fail(f"bundle:{name}", problem)
        if info.flag_bits & 0x1:
            raise _fail(f"bundle:{name}", "is encrypted; export the bundle without a password")
        if info.is_dir():
            continue
        if name in files:
            raise _fail(f"bundle:{name}", "appears twice in the archive")
        files[name] = info
        total += info.file_size
        if total > max_bytes:  # the sizes zipfile will extract to: a zip bomb stops here, before any read
            raise _fail("bundle", f"uncompresses to more than {max_bytes} bytes (the limit)")
    if RESULT_FILENAME in files:
        return files, ""
    nested = [n for n in files if n.count("/") == 1 and n.endswith("/" + RESULT_FILENAME) and not n.startswith("__MACOSX/")]
    if len(nested) == 1:
        return files, nested[0][: -len(RESULT_FILENAME)]
    raise _fail(f"bundle:{RESULT_FILENAME}", "is missing: a bundle has result.json at its top level (or in its one folder)")


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, limit: int) -> bytes:
    if info.file_size > limit:
        raise _fail(f"bundle:{info.filename}", f"is {info.file_size} bytes; the limit is {limit}")
    try:
        with archive.open(info) as member:
            data = member.read(limit + 1)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise _fail(f"bundle:{info.filename}", f"cannot be read: {exc}") from None
    if len(data) > limit:
        raise _fail(f"bundle:{info.filename}", f"is larger than {limit} bytes")
    return data


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _parse_result(raw: bytes) -> dict:
    path = f"{RESULT_FILENAME}$"
    try:
        doc = json.loads(raw.decode("utf-8-sig"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise _fail(path, "is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise _fail(path, f"is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise _fail(path, f"nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # NaN/Infinity, or an integer beyond Python's digit limit
        raise _fail(path, f"is not acceptable JSON: {exc}") from None
    problem = _check_json_values(doc)
    if problem:
        where = problem["path"]
        raise _fail(path if where in ("", "$") else f"{path}{'' if where.startswith('[') else '.'}{where}", problem["message"])
    if not isinstance(doc, dict):
        raise _fail(path, f"must be a JSON object (an rlmesh.result.v1 document), got {_type(doc)}")
    return doc


# -------------------------------------------------------------- validation
def _type(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) < 1e300 and math.isfinite(value)


class _Checker:
    """Collects ``{"path", "message"}`` problems with ``result.json$``-prefixed paths."""

    def __init__(self):
        self.errors: list[dict] = []

    def add(self, path: str, message: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append({"path": f"{RESULT_FILENAME}{path}", "message": message})

    def string(self, obj: dict, key: str, path: str, *, required: bool = True, max_length: int = 300) -> str | None:
        value = obj.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            self.add(f"{path}.{key}", "is required: a non-empty string" if key not in obj else f"must be a non-empty string, got {_type(value)}")
            return None
        if len(value) > max_length:
            self.add(f"{path}.{key}", f"is longer than {max_length} characters")
            return None
        return value

    def integer(self, obj: dict, key: str, path: str, *, low: int, high: int, required: bool = True, nullable: bool = False):
        value = obj.get(key)
        if key not in obj and not required:
            return None
        if value is None and nullable and key in obj:
            return None
        if not _is_int(value):
            self.add(f"{path}.{key}", f"must be an integer, got {_type(value)}" if key in obj else "is required: an integer")
            return None
        if not low <= value <= high:
            self.add(f"{path}.{key}", f"must be between {low} and {high}, got {value}")
            return None
        return value

    def boolean(self, obj: dict, key: str, path: str, *, required: bool = True, nullable: bool = False, default=None):
        if key not in obj:
            if required:
                self.add(f"{path}.{key}", "is required: true or false")
            return default
        value = obj[key]
        if value is None and nullable:
            return None
        if not isinstance(value, bool):
            self.add(f"{path}.{key}", f"must be true or false{' or null' if nullable else ''}, got {_type(value)}")
            return default
        return value

    def number(self, obj: dict, key: str, path: str, *, required: bool = True, low: float | None = None):
        if key not in obj and not required:
            return None
        value = obj.get(key)
        if not _is_number(value):
            self.add(f"{path}.{key}", f"must be a finite number, got {_type(value)}" if key in obj else "is required: a number")
            return None
        if low is not None and value < low:
            self.add(f"{path}.{key}", f"must be at least {low:g}, got {value}")
            return None
        return float(value)


def _criterion(value, path: str, check: _Checker) -> dict | None:
    if not isinstance(value, dict):
        check.add(path, f"must be an object such as {{\"kind\": \"survived\"}}, got {_type(value)}")
        return None
    kind = value.get("kind")
    if kind not in CRITERION_KINDS:
        check.add(f"{path}.kind", f"must be one of {', '.join(CRITERION_KINDS)}, got {kind!r}")
        return None
    if kind == "return_at_least" and not _is_number(value.get("threshold")):
        check.add(f"{path}.threshold", "is required for return_at_least: a finite number")
        return None
    return value


def _stop_condition(*, terminated: bool, truncated: bool, steps: int, max_steps: int | None) -> str:
    """The platform's stop condition for an imported outcome (as services.execution decides it for its own runs)."""
    if terminated:
        return StopCondition.TERMINATED
    if truncated and max_steps is not None and steps >= max_steps:
        return StopCondition.MAX_STEPS
    if truncated and steps >= STEP_BOUND:
        return StopCondition.STEP_BOUND
    return StopCondition.TIME_LIMIT


def _validate(doc: dict, *, archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], root: str) -> _Plan:
    """Check the document against rlmesh.result.v1 and the archive; return what to write. BundleInvalid otherwise."""
    check = _Checker()
    schema = doc.get("schema")
    if schema != SCHEMA:
        got = "it is missing" if "schema" not in doc else f"got {schema!r}"
        raise BundleInvalid([{"path": f"{RESULT_FILENAME}$.schema", "message": f"must be {SCHEMA!r} ({got}); export the bundle with rlmesh.Recorder"}])
    check.string(doc, "resultSetId", "$", required=False, max_length=200)
    recorded_at = None
    if doc.get("recordedAt") is not None:
        raw_at = doc["recordedAt"]
        recorded_at = parse_datetime(raw_at) if isinstance(raw_at, str) else None
        if recorded_at is None:
            check.add("$.recordedAt", f"must be an ISO 8601 date-time, got {raw_at!r}")
        elif timezone.is_naive(recorded_at):
            recorded_at = timezone.make_aware(recorded_at, dt.timezone.utc)
    if "rlmeshVersion" in doc and not isinstance(doc["rlmeshVersion"], str):
        check.add("$.rlmeshVersion", f"must be a string, got {_type(doc['rlmeshVersion'])}")
    workloads = doc.get("workloads")
    if not isinstance(workloads, list) or not workloads:
        raise BundleInvalid([{"path": f"{RESULT_FILENAME}$.workloads", "message": "must be a non-empty array of workloads" if isinstance(workloads, list) else f"is required: an array of workloads, got {_type(workloads)}"}])
    max_workloads = settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION
    if len(workloads) > max_workloads:
        raise BundleInvalid([{"path": f"{RESULT_FILENAME}$.workloads", "message": f"has {len(workloads)} workloads; the limit is {max_workloads}"}])
    max_episodes = settings.RLMESH_MAX_EPISODES_PER_EVALUATION
    total = sum(len(w["episodes"]) for w in workloads if isinstance(w, dict) and isinstance(w.get("episodes"), list))
    if total > max_episodes:
        raise BundleInvalid([{"path": f"{RESULT_FILENAME}$.workloads", "message": f"has {total} episodes; the limit per evaluation is {max_episodes}"}])

    plan = _Plan(doc=doc, workloads=[], recorded_at=recorded_at, warnings=[])
    for wi, w in enumerate(workloads):
        wpath = f"$.workloads[{wi}]"
        if not isinstance(w, dict):
            check.add(wpath, f"must be an object, got {_type(w)}")
            continue
        model = check.string(w, "model", wpath)
        env = check.string(w, "env", wpath)
        task = check.string(w, "task", wpath)
        config = w.get("config", {})
        if config is None:
            config = {}
        if not isinstance(config, dict):
            check.add(f"{wpath}.config", f"must be an object, got {_type(config)}")
            config = {}
        criterion = _criterion(config["successCriterion"], f"{wpath}.config.successCriterion", check) if config.get("successCriterion") is not None else None
        max_steps = check.integer(config, "maxEpisodeSteps", f"{wpath}.config", low=1, high=MAX_UINT32, required=False, nullable=True)
        episodes = w.get("episodes")
        if not isinstance(episodes, list):
            check.add(f"{wpath}.episodes", f"is required: an array of episodes, got {_type(episodes)}" if "episodes" in w else "is required: an array of episodes")
            continue
        if "numEpisodes" in w and w["numEpisodes"] != len(episodes):
            check.add(f"{wpath}.numEpisodes", f"says {w['numEpisodes']!r} but the workload lists {len(episodes)} episodes")
        benchmark, scenario = split_task_id(task or "")
        workload = _Workload(
            fields={
                "model_ref": model, "env_ref": env, "task_id": task, "benchmark": (benchmark or "")[:128],
                "scenario": scenario[:300], "max_steps": max_steps, "success_criterion": criterion,
            },
            config=config,
        )
        plan.workloads.append(workload)
        seen: dict[int, int] = {}
        for ei, ep in enumerate(episodes):
            epath = f"{wpath}.episodes[{ei}]"
            if not isinstance(ep, dict):
                check.add(epath, f"must be an object, got {_type(ep)}")
                continue
            index = check.integer(ep, "index", epath, low=0, high=MAX_UINT32)
            if index is not None:
                if index in seen:
                    check.add(f"{epath}.index", f"repeats the index of episodes[{seen[index]}]")
                seen.setdefault(index, ei)
            seed = check.integer(ep, "seed", epath, low=0, high=MAX_INT64, nullable=True)
            steps = check.integer(ep, "steps", epath, low=0, high=MAX_UINT32)
            reward = check.number(ep, "reward", epath)
            terminated = check.boolean(ep, "terminated", epath)
            truncated = check.boolean(ep, "truncated", epath)
            flag = check.boolean(ep, "success", epath, required=False, nullable=True)
            duration = check.number(ep, "durationS", epath, required=False, low=0)
            included = check.boolean(ep, "includedInMetrics", epath, required=False, default=True)
            video = _episode_video(ep, epath, archive=archive, members=members, root=root, check=check, plan=plan)
            if check.errors:
                continue  # the import fails anyway; keep collecting problems only
            if not included:
                plan.skipped += 1
                continue
            stop = _stop_condition(terminated=terminated, truncated=truncated, steps=steps, max_steps=max_steps)
            success, source = episode_success(env_flag=flag, criterion=criterion, terminated=terminated, reward=reward, stop_condition=stop, steps=steps)
            if ep.get("seed") is None:
                plan.unseeded += 1
            if source == "terminated":
                plan.by_terminated += 1
            workload.episodes.append(
                _Episode(
                    fields={
                        "index": index, "seed": UNSEEDED if ep.get("seed") is None else seed, "status": EpisodeStatus.COMPLETED,
                        "reward": reward, "success": success, "success_source": source, "steps": steps,
                        "terminated": terminated, "truncated": truncated, "stop_condition": stop,
                        "wall_ms": duration * 1000 if duration is not None else None,
                    },
                    video=video,
                )
            )
        if len(check.errors) >= MAX_ERRORS:
            break
    if check.errors:
        raise BundleInvalid(check.errors)
    if plan.skipped:
        plan.warnings.append(f"{plan.skipped} episodes marked includedInMetrics: false were not imported")
    if plan.unseeded:
        plan.warnings.append(f"{plan.unseeded} episodes were recorded without a seed; their seed is shown as {UNSEEDED}")
    if plan.by_terminated:
        plan.warnings.append(
            f"{plan.by_terminated} episodes have no success flag and their workload no config.successCriterion: "
            "success is `terminated`"
        )
    if plan.extra_media:
        plan.warnings.append(f"{plan.extra_media} further media files (other cameras or formats) were checked but not stored")
    return plan


def _episode_video(ep: dict, epath: str, *, archive, members, root: str, check: _Checker, plan: _Plan) -> _Video | None:
    """Check every media row of an episode (each must be in the bundle); return the video to store, if any."""
    media = ep.get("media", [])
    if media is None:
        return None
    if not isinstance(media, list):
        check.add(f"{epath}.media", f"must be an array, got {_type(media)}")
        return None
    candidates: list[_Video] = []
    for mi, row in enumerate(media):
        mpath = f"{epath}.media[{mi}]"
        if not isinstance(row, dict):
            check.add(mpath, f"must be an object, got {_type(row)}")
            continue
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
            continue
        problem = _unsafe_name(rel)
        if problem:
            check.add(f"{mpath}.path", problem)
            continue
        info = members.get(root + rel)
        if info is None:
            check.add(f"{mpath}.path", f"{rel} is not in the bundle")
            continue
        fmt = (fmt or os.path.splitext(rel)[1].lstrip(".")).lower()
        if kind == "video" and fmt in VIDEO_FORMATS:
            head = _read_head(archive, info)
            if not _looks_like(fmt, head):
                check.add(f"{mpath}.path", f"{rel} is not an MP4 file (no ftyp box)")
                continue
            candidates.append(_Video(member=info, path=rel, fmt=fmt, camera=camera, meta=meta))
        else:
            plan.extra_media += 1
    if not candidates:
        return None
    chosen = next((c for c in candidates if c.camera == "render"), candidates[0])
    plan.extra_media += len(candidates) - 1
    return chosen


def _read_head(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    try:
        with archive.open(info) as member:
            return member.read(16)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise _fail(f"bundle:{info.filename}", f"cannot be read: {exc}") from None


def _looks_like(fmt: str, head: bytes) -> bool:
    """Whether the leading bytes prove the format (an MP4 starts with its ``ftyp`` box)."""
    return fmt == "mp4" and len(head) >= 8 and head[4:8] == b"ftyp"


# ------------------------------------------------------------------- media
def _mp4_codec(f) -> str | None:
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


def _store_videos(plan: _Plan, *, archive: zipfile.ZipFile, public_id: str, saved: list[str]) -> None:
    """Copy every chosen video into the default storage; record the stored names in ``saved`` as they land."""
    video_field = Episode._meta.get_field("video")
    storage = video_field.storage
    for wi, workload in enumerate(plan.workloads):
        for ep in workload.episodes:
            video = ep.video
            if video is None:
                continue
            camera = _UNSAFE_CHARS.sub("_", video.camera).strip("._-")[:40] or "video"
            filename = f"{public_id}-w{wi:03d}-ep{ep.fields['index']:05d}-{camera}.{video.fmt}"
            with tempfile.SpooledTemporaryFile(max_size=8 * CHUNK) as tmp:
                size = 0
                try:
                    with archive.open(video.member) as member:
                        while chunk := member.read(CHUNK):
                            size += len(chunk)
                            tmp.write(chunk)
                except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
                    raise _fail(f"bundle:{video.member.filename}", f"cannot be read: {exc}") from None
                codec = _mp4_codec(tmp) if video.fmt == "mp4" else None
                tmp.seek(0)
                name = storage.save(video_field.generate_filename(None, filename), File(tmp, name=filename), max_length=300)
            saved.append(name)
            ep.fields["video"] = name
            ep.fields["video_meta"] = {
                "bytes": size, "codec": codec, **video.meta, "format": video.fmt, "camera": video.camera, "bundlePath": video.path,
            }


# ------------------------------------------------------------------- write
def _summary(doc: dict) -> dict:
    """The document without its per-episode arrays (they live in Episode rows)."""
    out = {k: v for k, v in doc.items() if k != "workloads"}
    out["workloads"] = [
        {**{k: v for k, v in w.items() if k != "episodes"}, "episodes": [], "episodesOmitted": len(w.get("episodes") or [])}
        for w in doc["workloads"]
    ]
    return out


def _write(plan: _Plan, *, raw: bytes, public_id: str, organization, user, api_key, name: str, file_name: str, size: int, sha256: str) -> Evaluation:
    doc = plan.doc
    now = timezone.now()
    verbatim = len(raw) <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if verbatim:
        request_raw, request = raw.decode("utf-8-sig"), doc
    else:
        request = _summary(doc)
        request_raw = json.dumps(request, indent=2)
    n_episodes = sum(len(w.episodes) for w in plan.workloads)
    n_videos = sum(1 for w in plan.workloads for e in w.episodes if e.video is not None)
    config = {
        "origin": "import",
        "import": {
            "fileName": file_name,
            "bytes": size,
            "sha256": sha256,
            "schema": doc["schema"],
            "resultSetId": doc.get("resultSetId"),
            "recordedAt": doc.get("recordedAt"),
            "rlmeshVersion": doc.get("rlmeshVersion"),
            "importedAt": now.isoformat(),
            "episodes": n_episodes,
            "skippedEpisodes": plan.skipped,
            "videos": n_videos,
            "resultJson": "verbatim" if verbatim else "summary",
        },
        "workloads": [
            {
                "index": i,
                "model": w.fields["model_ref"],
                "env": w.fields["env_ref"],
                "taskId": w.fields["task_id"],
                "episodes": len(w.episodes),
                "maxSteps": w.fields["max_steps"],
                "successCriterion": w.fields["success_criterion"],
                "config": w.config,
            }
            for i, w in enumerate(plan.workloads)
        ],
    }
    finished = plan.recorded_at or now
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            public_id=public_id,
            organization=organization,
            creator=user if getattr(user, "pk", None) else None,
            api_key=api_key,
            name=(name or "").strip()[:200] or f"Import of {file_name or 'a result bundle'}"[:200],
            status=EvaluationStatus.COMPLETED,
            origin="import",
            request_raw=request_raw,
            request=request,
            config=config,
            warnings=plan.warnings,
            total_episodes=n_episodes,
            completed_episodes=n_episodes,
            errored_episodes=0,
            finished_at=now,
        )
        for i, w in enumerate(plan.workloads):
            seeds = [e.fields["seed"] for e in w.episodes if e.fields["seed"] != UNSEEDED]
            workload = Workload.objects.create(
                evaluation=evaluation,
                index=i,
                episodes=len(w.episodes),
                seed=min(seeds) if seeds else 0,
                **w.fields,
            )
            Episode.objects.bulk_create(
                (Episode(evaluation=evaluation, workload=workload, finished_at=finished, **e.fields) for e in w.episodes),
                batch_size=500,
            )
        log(
            evaluation,
            f"imported {file_name or 'a result bundle'} (sha256 {sha256[:12]}…, {size} bytes): "
            f"{len(plan.workloads)} workloads, {n_episodes} episodes, {n_videos} videos",
        )
    return evaluation
