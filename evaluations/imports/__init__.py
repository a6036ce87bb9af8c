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
                                  "trajectoryDigest": 64 hex characters (optional, not written by rlmesh),
                                  "media": [{"camera", "kind": "video", "path", "format": "mp4",
                                             "frameCount", "width", "height", "fps"}]}]}]}

A zip of the exported *folder* (everything under one top-level directory) is accepted too. Each bundle workload
becomes one Workload (model × env × task; no image versions), each episode one Episode, and each episode's
first MP4 ``video`` (the ``render`` camera when there is one) is copied into ``Episode.video`` through Django's
default storage. The per-workload ``metrics`` are recomputed by the platform, never trusted.

Success: the episode's ``success`` (the env's own flag, as rlmesh reports it) → source ``env``; else the
platform criterion in the workload's ``config.successCriterion`` (``{"kind": "survived" | "terminated" |
"return_at_least" | "env_flag", "threshold": x, "steps": n}``, checked as a request's) → ``criterion``; else
success is **undefined** (``success: null``, source ``undefined``): ``terminated`` is never taken for success (on
CartPole it means the pole fell). ``config.maxEpisodeSteps`` (the
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

import logging
import zipfile
from typing import IO

from django.conf import settings

from ..domain.text import display_text_problem, storable_text_problem
from ..choices import ImageKind
from ..models import ApiKey, Episode, Evaluation, Organization
from ..prebuilt.catalog import trajectory_comparable
from ..services.image_versions import ReferenceError_, resolve_reference
from ..models.evaluations import new_public_id
from .archive import READ_ERRORS, RESULT_FILENAME, BundleInvalid, check_members, clean_file_name, expansion_limit, fail, measure, read_member
from .document import parse_result, validate
from .media import store_videos
from .write import write_evaluation

__all__ = ["BundleInvalid", "import_bundle"]

logger = logging.getLogger(__name__)

#: result.json is parsed in memory: it may be at most this large (100,000 episodes take about 40 MB).
MAX_RESULT_JSON_BYTES = 64 * 1024 * 1024


def _delete_quietly(names: list[str], public_id: str) -> None:
    storage = Episode._meta.get_field("video").storage
    for stored in names:
        try:
            storage.delete(stored)
        except Exception:  # noqa: BLE001 - best effort; the original error matters more
            logger.warning("import %s: could not delete %s after a failed import", public_id, stored)


def _check_name(name: str) -> None:
    """The evaluation name follows the rules of a submitted one (at most 200 characters, displayable text)."""
    problem = ("at most 200 characters (as for submitted evaluations)" if len(name) > 200
               else storable_text_problem(name) or display_text_problem(name))
    if problem:
        raise BundleInvalid([{"path": "name", "message": problem}])


def _check_not_imported(organization: Organization, sha256: str) -> None:
    """An identical bundle (same sha256) is imported once per organization: a second upload is a 409 naming the
    evaluation it became."""
    previous = (
        Evaluation.objects.for_org(organization).filter(origin="import", config__import__sha256=sha256)
        .values_list("public_id", flat=True).first()
    )
    if previous:
        raise BundleInvalid([{"path": "bundle", "message": f"this bundle (same sha256) was already imported as {previous}"}],
                            code="conflict", status=409)


def _check_quota(organization: Organization, plan) -> None:
    """The bundle's videos must fit in what is left of the organization's storage quota (413 otherwise)."""
    needed = sum(ep.video.member.file_size for w in plan.workloads for ep in w.episodes if ep.video is not None)
    left = organization.storage_left()
    if needed > left:
        raise BundleInvalid(
            [{"path": "bundle", "message": f"its videos take {needed} bytes but the organization has {max(left, 0)} bytes "
              f"of its storage quota left (RLMESH_ORG_STORAGE_QUOTA_BYTES)"}],
            code="storage_quota_exceeded", status=413,
        )


def _env_comparable(env_ref: str, organization: Organization) -> bool:
    """Whether episodes of the env a bundle names compare by digest, as the platform's own episodes of that env do:
    the env's declaration (``prebuilt.catalog.trajectory_comparable``: browser envs run in real time, so not), never
    the bundle's say; an env unknown here declares nothing and compares (the platform's default)."""
    try:
        resolved = resolve_reference(env_ref, kind=ImageKind.ENV, organization=organization)
    except (ReferenceError_, ValueError):
        return True
    return trajectory_comparable(resolved.version)


def _apply_env_comparability(plan, organization: Organization) -> None:
    """Mark the digests of episodes on envs whose trajectories depend on wall-clock timing not comparable."""
    for workload in plan.workloads:
        if not _env_comparable(workload.fields["env_ref"] or "", organization):
            for episode in workload.episodes:
                if episode.fields.get("trajectory_digest"):
                    episode.fields["digest_comparable"] = False


def _open_archive(fileobj: IO[bytes]) -> tuple[zipfile.ZipFile, str, int, str]:
    """The upload as a zip: ``(archive, file name, size in bytes, sha256)``; BundleInvalid (413 past the limit)."""
    max_bytes = settings.RLMESH_IMPORT_MAX_BYTES
    file_name = clean_file_name(getattr(fileobj, "name", "") or "")
    size, sha256 = measure(fileobj, limit=max_bytes)
    if size > max_bytes:
        raise fail("bundle", f"the upload is larger than {max_bytes} bytes (the limit)", code="payload_too_large", status=413)
    if size == 0:
        raise fail("bundle", "the upload is empty; send the .zip that rlmesh.Recorder.export() wrote")
    try:
        return zipfile.ZipFile(fileobj), file_name, size, sha256
    except (zipfile.LargeZipFile, *READ_ERRORS) as exc:
        raise fail("bundle", f"not a zip archive ({exc}); send the .zip that rlmesh.Recorder.export() wrote") from None


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
    _check_name(name)
    archive, file_name, size, sha256 = _open_archive(fileobj)
    with archive:
        members, root = check_members(archive, max_bytes=expansion_limit(size))
        raw = read_member(archive, members[root + RESULT_FILENAME], limit=MAX_RESULT_JSON_BYTES)
        plan = validate(parse_result(raw), archive=archive, members=members, root=root)
        _check_not_imported(organization, sha256)
        _check_quota(organization, plan)
        _apply_env_comparability(plan, organization)
        public_id = new_public_id()
        saved: list[str] = []
        try:
            store_videos(plan, archive=archive, public_id=public_id, saved=saved)
            return write_evaluation(
                plan, raw=raw, public_id=public_id, organization=organization, user=user, api_key=api_key,
                name=name, file_name=file_name, size=size, sha256=sha256,
            )
        except BaseException:
            _delete_quietly(saved, public_id)
            raise
