"""result.json of an ``rlmesh.result.v1`` bundle: parsed strictly, checked against the schema (every problem with its
``result.json$`` JSON path) and turned into what to write, with the outcome rules the platform's own runs use
(:mod:`evaluations.domain.outcomes`)."""

from __future__ import annotations

import datetime as dt
import json
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..choices import EpisodeStatus, StopCondition, SuccessSource
from ..domain.outcomes import criterion_problems, episode_success, stop_condition
from ..domain.scoring import split_task_id
from ..planning import MAX_JSON_DEPTH, check_json_values
from ..planning.parse import loads_strict
from .archive import RESULT_FILENAME, BundleInvalid, fail
from .checks import MAX_ERRORS, MAX_INT64, MAX_UINT32, Checker, is_number, type_name
from .media import Video, episode_video

__all__ = ["BundlePlan", "UNSEEDED", "parse_result", "validate"]

SCHEMA = "rlmesh.result.v1"
UNSEEDED = -1
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


@dataclass
class PlannedEpisode:
    fields: dict
    video: Video | None = None


@dataclass
class PlannedWorkload:
    fields: dict
    config: dict
    #: ``config.maxEpisodeSeconds``: the wall-time cap the run used, when the bundle records one (seconds).
    wall_cap: float | None = None
    episodes: list[PlannedEpisode] = field(default_factory=list)


@dataclass
class BundlePlan:
    doc: dict
    workloads: list[PlannedWorkload]
    recorded_at: Any
    warnings: list[str]
    skipped: int = 0
    unseeded: int = 0
    undefined: int = 0
    extra_media: int = 0


def parse_result(raw: bytes) -> dict:
    """result.json's bytes as a JSON object; BundleInvalid (path ``result.json$…``) for anything else."""
    path = f"{RESULT_FILENAME}$"
    try:
        doc = loads_strict(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise fail(path, "is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise fail(path, f"is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise fail(path, f"nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # NaN/Infinity, or an integer beyond Python's digit limit
        raise fail(path, f"is not acceptable JSON: {exc}") from None
    problem = check_json_values(doc)
    if problem:
        where = problem["path"]
        raise fail(path if where in ("", "$") else f"{path}{'' if where.startswith('[') else '.'}{where}", problem["message"])
    if not isinstance(doc, dict):
        raise fail(path, f"must be a JSON object (an rlmesh.result.v1 document), got {type_name(doc)}")
    return doc


def check_criterion(value, path: str, check: Checker) -> dict | None:
    """A workload's ``config.successCriterion`` checked with the platform's own rules (domain.outcomes). It ranks
    after the env's own flag (``declaredBy: "bundle"``), as the import rule has always said."""
    problems = criterion_problems(value)
    for sub, message in problems:
        check.add(f"{path}{sub}", message)
    return None if problems else {**value, "declaredBy": "bundle"}


def _check_header(doc: dict, check: Checker):
    """Check the document's top level; return ``(recorded_at, workloads)``. Raises BundleInvalid at once for a wrong
    schema, no workloads, or more workloads or episodes than one evaluation may hold."""
    schema = doc.get("schema")
    if schema != SCHEMA:
        got = "it is missing" if "schema" not in doc else f"got {schema!r}"
        raise fail(f"{RESULT_FILENAME}$.schema", f"must be {SCHEMA!r} ({got}); export the bundle with rlmesh.Recorder")
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
        check.add("$.rlmeshVersion", f"must be a string, got {type_name(doc['rlmeshVersion'])}")
    workloads = doc.get("workloads")
    where = f"{RESULT_FILENAME}$.workloads"
    if not isinstance(workloads, list) or not workloads:
        raise fail(where, "must be a non-empty array of workloads" if isinstance(workloads, list)
                   else f"is required: an array of workloads, got {type_name(workloads)}")
    if len(workloads) > settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION:
        raise fail(where, f"has {len(workloads)} workloads; the limit is {settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION}")
    total = sum(len(w["episodes"]) for w in workloads if isinstance(w, dict) and isinstance(w.get("episodes"), list))
    if total > settings.RLMESH_MAX_EPISODES_PER_EVALUATION:
        raise fail(where, f"has {total} episodes; the limit per evaluation is {settings.RLMESH_MAX_EPISODES_PER_EVALUATION}")
    return recorded_at, workloads


def _check_workload(w, wpath: str, check: Checker) -> tuple[PlannedWorkload, list] | None:
    """The workload's fields and its episode list, or None when it is not an object or has no episode array."""
    if not isinstance(w, dict):
        check.add(wpath, f"must be an object, got {type_name(w)}")
        return None
    model, env, task = (check.string(w, key, wpath) for key in ("model", "env", "task"))
    config = w.get("config", {})
    if config is None:
        config = {}
    if not isinstance(config, dict):
        check.add(f"{wpath}.config", f"must be an object, got {type_name(config)}")
        config = {}
    criterion = None
    if config.get("successCriterion") is not None:
        criterion = check_criterion(config["successCriterion"], f"{wpath}.config.successCriterion", check)
    max_steps = check.integer(config, "maxEpisodeSteps", f"{wpath}.config", low=1, high=MAX_UINT32, required=False, nullable=True)
    # The rlmesh.run wall-time cap when the caller recorded one (free-form config: an unusable value is ignored).
    wall_cap = float(config["maxEpisodeSeconds"]) if is_number(config.get("maxEpisodeSeconds")) else None
    episodes = w.get("episodes")
    if not isinstance(episodes, list):
        check.add(f"{wpath}.episodes", f"is required: an array of episodes, got {type_name(episodes)}" if "episodes" in w
                  else "is required: an array of episodes")
        return None
    if "numEpisodes" in w and w["numEpisodes"] != len(episodes):
        check.add(f"{wpath}.numEpisodes", f"says {w['numEpisodes']!r} but the workload lists {len(episodes)} episodes")
    benchmark, scenario = split_task_id(task or "")
    fields = {"model_ref": model, "env_ref": env, "task_id": task, "benchmark": (benchmark or "")[:128],
              "scenario": scenario[:300], "max_steps": max_steps, "success_criterion": criterion}
    return PlannedWorkload(fields=fields, config=config, wall_cap=wall_cap), episodes


def _check_episode(ep, epath: str, check: Checker, seen: dict[int, int], position: int) -> dict | None:
    """The episode's checked values (None when it is not an object)."""
    if not isinstance(ep, dict):
        check.add(epath, f"must be an object, got {type_name(ep)}")
        return None
    index = check.integer(ep, "index", epath, low=0, high=MAX_UINT32)
    if index is not None:
        if index in seen:
            check.add(f"{epath}.index", f"repeats the index of episodes[{seen[index]}]")
        seen.setdefault(index, position)
    return {
        "index": index,
        "seed": check.integer(ep, "seed", epath, low=0, high=MAX_INT64, nullable=True),
        "steps": check.integer(ep, "steps", epath, low=0, high=MAX_UINT32),
        "reward": check.number(ep, "reward", epath),
        "terminated": check.boolean(ep, "terminated", epath),
        "truncated": check.boolean(ep, "truncated", epath),
        "flag": check.boolean(ep, "success", epath, required=False, nullable=True),
        "duration": check.number(ep, "durationS", epath, required=False, low=0),
        "included": check.boolean(ep, "includedInMetrics", epath, required=False, default=True),
        "digest": _digest(ep, epath, check),
    }


def _digest(ep: dict, epath: str, check: Checker) -> str:
    """The episode's optional ``trajectoryDigest`` (64 hex characters, :mod:`evaluations.domain.trajectory`), lowercase;
    "" when absent or null (rlmesh's Recorder writes none)."""
    value = ep.get("trajectoryDigest")
    if value is None:
        return ""
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        check.add(f"{epath}.trajectoryDigest", f"must be 64 hex characters (a SHA-256) or null, got {type_name(value)}"
                  + (f" of {len(value)} characters" if isinstance(value, str) else ""))
        return ""
    return value.lower()


def _outcome(v: dict, workload: PlannedWorkload) -> dict:
    """Episode fields of a valid, included episode, judged by the platform's shared outcome rules."""
    w = workload.fields
    stop = stop_condition(terminated=v["terminated"], truncated=v["truncated"], steps=v["steps"],
                          max_steps=w["max_steps"], wall_s=v["duration"], wall_cap=workload.wall_cap)
    success, source = episode_success(env_flag=v["flag"], criterion=w["success_criterion"], terminated=v["terminated"],
                                      reward=v["reward"], stop_condition=stop, steps=v["steps"])
    return {
        "index": v["index"], "seed": UNSEEDED if v["seed"] is None else v["seed"], "status": EpisodeStatus.COMPLETED,
        "reward": v["reward"], "success": success, "success_source": source, "steps": v["steps"],
        "terminated": v["terminated"], "truncated": v["truncated"], "stop_condition": stop,
        "wall_ms": v["duration"] * 1000 if v["duration"] is not None else None,
        "trajectory_digest": v["digest"],
        "digest_comparable": stop != StopCondition.WALL_TIME if v["digest"] else None,
    }


def _add_episodes(workload: PlannedWorkload, episodes: list, wpath: str, plan: BundlePlan, check: Checker,
                  media: dict) -> None:
    seen: dict[int, int] = {}
    for ei, ep in enumerate(episodes):
        epath = f"{wpath}.episodes[{ei}]"
        values = _check_episode(ep, epath, check, seen, ei)
        if values is None:
            continue
        video, extra = episode_video(ep, epath, check=check, **media)
        plan.extra_media += extra
        if check.errors:
            continue  # the import fails anyway; keep collecting problems only
        if not values["included"]:
            plan.skipped += 1
            continue
        fields = _outcome(values, workload)
        plan.unseeded += values["seed"] is None
        plan.undefined += fields["success_source"] == SuccessSource.UNDEFINED
        workload.episodes.append(PlannedEpisode(fields=fields, video=video))


def _warnings(plan: BundlePlan) -> list[str]:
    out = []
    if plan.skipped:
        out.append(f"{plan.skipped} episodes marked includedInMetrics: false were not imported")
    if plan.unseeded:
        out.append(f"{plan.unseeded} episodes were recorded without a seed; their seed is shown as {UNSEEDED}")
    if plan.undefined:
        out.append(f"{plan.undefined} episodes have no success flag and their workload no config.successCriterion: "
                   "success is undefined (null; returns are still scored)")
    if plan.extra_media:
        out.append(f"{plan.extra_media} further media files (other cameras or formats) were checked but not stored")
    return out


def validate(doc: dict, *, archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], root: str) -> BundlePlan:
    """Check the document against rlmesh.result.v1 and the archive; return what to write. BundleInvalid (listing up to
    ``MAX_ERRORS`` problems) otherwise."""
    check = Checker()
    recorded_at, workloads = _check_header(doc, check)
    plan = BundlePlan(doc=doc, workloads=[], recorded_at=recorded_at, warnings=[])
    media = {"archive": archive, "members": members, "root": root}
    for wi, w in enumerate(workloads):
        wpath = f"$.workloads[{wi}]"
        checked = _check_workload(w, wpath, check)
        if checked is not None:
            workload, episodes = checked
            plan.workloads.append(workload)
            _add_episodes(workload, episodes, wpath, plan, check, media)
        if len(check.errors) >= MAX_ERRORS:
            break
    if check.errors:
        raise BundleInvalid(check.errors)
    plan.warnings.extend(_warnings(plan))
    return plan
