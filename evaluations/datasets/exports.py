"""An evaluation's recorded episodes as a LeRobotDataset: what may be exported, the export job, its document.

Exporting takes longer than a request should (importing lerobot and torch alone takes 5–15 s here, then a PNG per
image per frame), so ``POST …/lerobot-dataset`` records a :class:`~evaluations.models.DatasetExport` and a Celery
task (``evaluations.build_dataset_export``, maintenance queue) builds it: it copies the recorded steps out of
storage, runs :mod:`evaluations.datasets.lerobot_writer` on the lerobot venv's interpreter with the Hugging Face
Hub turned off, zips the dataset folder and stores the zip, which ``GET …/lerobot-dataset.zip`` serves.

At most one export of an evaluation is built at a time: a request for other ``images`` while one is queued or running
is refused (409 ``export_running``, naming it), never queued behind it nor cancelling it. The newest ready export of
each ``images`` mode is kept, so a ready zip stays downloadable while another mode builds, and asking for a mode that is
ready answers with it instead of building again. An organization builds at most
``settings.RLMESH_ORG_DATASET_EXPORTS_BUILDING`` exports at once (429 ``too_many_exports`` past it). An evaluation
whose tasks recorded differently shaped features (CartPole's 4 numbers and Pendulum's 3) is refused at the request
(409 ``features_differ``, naming the tasks and their shapes): a LeRobotDataset holds one shape per feature.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from ..choices import EpisodeStatus
from ..models import DatasetExport, Episode, Evaluation
from ..prebuilt.lerobot.smolvla import OFFLINE_ENV
from .. import dispatch
from ..reports.reproduction import reproduction_rows
from ..runs.reaper import worker_lost
from ..runs.workers import live_identities, worker_identity
from ..runtime.forkchild import die_with_parent
from ..runtime.local import installed_python
from .lerobot_frames import IMAGE_MODES, MappingProblem, check_steps_file, features, header_arrays, shape_differences
from ..runs.recording import FPS

__all__ = ["ExportRefused", "IMAGE_MODES", "SETUP_SCRIPT", "build_export", "export_document", "latest_export", "manifest_extra",
           "ready_export", "request_export"]

logger = logging.getLogger(__name__)

SETUP_SCRIPT = "scripts/setup-lerobot.sh"
#: The writer's time limit; an export running longer than this (plus a minute) is taken for lost and may be redone.
WRITE_TIMEOUT_SECONDS = 3600
KIND = "lerobot"


@dataclass
class ExportRefused(Exception):
    """Why an evaluation cannot be exported now: an HTTP status, an error code, words saying what to do, and the
    envelope's ``details`` (``[{"path", "message", …}]``)."""

    status: int
    code: str
    message: str
    details: list | None = None

    def __str__(self) -> str:
        return self.message


def lerobot_python() -> str | None:
    """The lerobot venv's interpreter (``settings.RLMESH_PYTHON_ENVS["lerobot"]``) when it is installed (its install
    stamp is there: :func:`~evaluations.runtime.local.installed_python`), else None."""
    return installed_python("lerobot")


def recorded_episodes(evaluation: Evaluation):
    """The evaluation's completed episodes that kept their steps, in dataset order (workload, then index)."""
    return (Episode.objects.filter(evaluation=evaluation, status=EpisodeStatus.COMPLETED).exclude(steps_file="")
            .select_related("workload", "workload__env_version").order_by("workload__index", "index"))


def _steps_not_recorded(evaluation: Evaluation) -> ExportRefused:
    """The 409 ``steps_not_recorded`` of an evaluation with no stored steps, saying why and what can be done: an
    imported evaluation (bundles carry no steps; it cannot be resubmitted here), steps recorded but not stored (the
    reason the episodes give: the quota, the recording cap, a write error), or steps never asked for."""
    public_id = evaluation.public_id
    if evaluation.origin == "import":
        return ExportRefused(409, "steps_not_recorded", f"evaluation {public_id} was imported from a result bundle, "
                             "which carries no recorded steps; only an evaluation run on this platform with "
                             '"recordSteps" can be exported as a dataset')
    lost = (Episode.objects.filter(evaluation=evaluation, status=EpisodeStatus.COMPLETED, steps_file="")
            .exclude(steps_meta={}).values_list("steps_meta", flat=True))
    reasons = sorted({str(meta.get("error")) for meta in lost[:1000] if isinstance(meta, dict) and meta.get("error")})
    if reasons:
        return ExportRefused(409, "steps_not_recorded", f"evaluation {public_id} recorded its steps but stored none: "
                             + "; ".join(reasons[:3]) + ". Free storage (delete older exports or evaluations) or ask "
                             "an operator for more, then run the evaluation again",
                             [{"path": "recordSteps", "message": reason} for reason in reasons[:10]])
    return ExportRefused(409, "steps_not_recorded", f"evaluation {public_id} kept no episode's steps: submit it again "
                         'with "recordSteps": "all" (or "first:N") on its tasks; only those episodes can be exported '
                         "as a dataset")


def check_exportable(evaluation: Evaluation) -> None:
    """Raise ExportRefused unless ``evaluation`` has ended, kept the steps of an episode, the lerobot venv is
    installed on this host and the organization has storage left for the zip (409, 409, 503, 413)."""
    if not evaluation.is_terminal:
        raise ExportRefused(409, "conflict", f"evaluation {evaluation.public_id} is {evaluation.status}; a dataset is "
                            "exported once it has ended")
    if not recorded_episodes(evaluation).exists():
        raise _steps_not_recorded(evaluation)
    if lerobot_python() is None:
        # The setting's folder name only: the server's absolute paths are not a member's business.
        venv = Path(str(settings.RLMESH_PYTHON_ENVS.get("lerobot") or ".venv-lerobot")).parent.parent.name
        raise ExportRefused(503, "lerobot_unavailable", f"the lerobot environment ({venv}) is not installed on this "
                            f"platform; an operator runs {SETUP_SCRIPT}")
    left = evaluation.organization.storage_left()
    if left <= 0:
        raise ExportRefused(413, "storage_quota_exceeded", f"the organization has no storage left ({-left} bytes over "
                            "its quota, RLMESH_ORG_STORAGE_QUOTA_BYTES): a dataset could not be stored. Delete older "
                            "exports or evaluations, or ask an operator for more")


def latest_export(evaluation: Evaluation) -> DatasetExport | None:
    """The evaluation's newest export, whatever its status."""
    return evaluation.dataset_exports.filter(kind=KIND).order_by("-created_at", "-id").first()


def ready_export(evaluation: Evaluation, images: str | None = None) -> DatasetExport | None:
    """The evaluation's newest ready export (of ``images`` storage when given) whose zip is in storage, or None."""
    for export in evaluation.dataset_exports.filter(kind=KIND, status=DatasetExport.Status.READY).exclude(file="") \
            .order_by("-created_at", "-id"):
        mode = export.meta.get("images", "image")
        if images in (None, mode) and default_storage.exists(export.file.name):
            return export
    return None


def _building() -> Q:
    """Exports queued or running and not yet taken for lost (:func:`_lost`)."""
    cutoff = timezone.now() - timedelta(seconds=WRITE_TIMEOUT_SECONDS + 60)
    return (Q(kind=KIND, status__in=(DatasetExport.Status.QUEUED, DatasetExport.Status.RUNNING))
            & (Q(started_at__gte=cutoff) | Q(started_at__isnull=True, created_at__gte=cutoff)))


def _task_shapes(evaluation: Evaluation, images: str) -> None:
    """Raise ExportRefused (409 ``features_differ``) when the tasks' recorded steps make differently shaped features
    (each task's first recorded episode with a step, read from the ``.npy`` headers only)."""
    specs: dict[int, tuple[str, dict]] = {}
    for episode in recorded_episodes(evaluation):
        workload = episode.workload
        if workload.index in specs or not episode.steps:
            continue
        try:
            with default_storage.open(episode.steps_file.name, "rb") as fh:
                spec = features(header_arrays(fh), images=images)
        except (OSError, ValueError):  # MappingProblem, a missing or unreadable file: the build says so in words
            continue
        specs[workload.index] = (f"tasks[{workload.index}] ({workload.env_ref} {workload.task_id})", spec)
    if len(specs) < 2:
        return
    (first, spec), *rest = specs.values()
    details = []
    for name, other in rest:
        for feature, (a, b) in shape_differences(spec, other).items():
            details.append({"path": feature, "message": f"{first}: {a}; {name}: {b}"})
    if details:
        raise ExportRefused(409, "features_differ", "the tasks recorded differently shaped features and a LeRobot "
                            "dataset holds one shape per feature: " + "; ".join(f"{d['path']} is {d['message']}"
                                                                               for d in details[:6])
                            + "; export an evaluation whose tasks share their observation and action shapes", details)


def _lost(export: DatasetExport) -> bool:
    started = export.started_at or export.created_at
    return (export.status in (DatasetExport.Status.QUEUED, DatasetExport.Status.RUNNING)
            and (timezone.now() - started).total_seconds() > WRITE_TIMEOUT_SECONDS + 60)


def request_export(evaluation: Evaluation, *, images: str = "image") -> tuple[DatasetExport, bool]:
    """The export of ``evaluation`` with ``images`` storage; ``(export, created)``: the one under way when it has the
    same ``images``, else the newest ready one of those ``images``, else a new one, sent to a worker.

    Raises ExportRefused: check_exportable's; 409 ``export_running`` while an export of other ``images`` is queued or
    running (one build per evaluation); 409 ``features_differ`` (:func:`_task_shapes`); 429 ``too_many_exports`` when
    the organization already builds ``RLMESH_ORG_DATASET_EXPORTS_BUILDING`` exports. ValueError for an ``images`` mode
    not in IMAGE_MODES."""
    if images not in IMAGE_MODES:
        raise ValueError(f'"{images}" is not an image storage; use one of {", ".join(IMAGE_MODES)}')
    check_exportable(evaluation)
    with transaction.atomic():
        # Requests for one evaluation take turns here, so two of them never both see "nothing under way".
        Evaluation.objects.select_for_update().filter(pk=evaluation.pk).exists()
        building = evaluation.dataset_exports.filter(_building()).order_by("-created_at", "-id").first()
        if building is not None and building.meta.get("images", "image") == images:
            return building, False
        ready = ready_export(evaluation, images)
        if ready is not None:  # also while an export of other images builds: it is served as it is
            return ready, False
        if building is not None:
            raise ExportRefused(409, "export_running", f"export {building.pk} of {evaluation.public_id} "
                                f"(images: {building.meta.get('images', 'image')}) is {building.status}; one export "
                                "of an evaluation is built at a time: poll GET …/lerobot-dataset until it ends, then "
                                "ask again", [{"path": "images", "message": f"export {building.pk} is {building.status}",
                                           "id": building.pk, "status": building.status}])
        _task_shapes(evaluation, images)
        limit = settings.RLMESH_ORG_DATASET_EXPORTS_BUILDING
        org_building = DatasetExport.objects.filter(_building(), evaluation__organization_id=evaluation.organization_id)
        if org_building.count() >= limit:
            raise ExportRefused(429, "too_many_exports", f"the organization already builds {limit} dataset "
                                f"export{'s' if limit != 1 else ''} at once (RLMESH_ORG_DATASET_EXPORTS_BUILDING); ask "
                                "again when one of them has ended")
        export = DatasetExport.objects.create(evaluation=evaluation, kind=KIND, meta={"images": images})
        dispatch.send_dataset_export(export.pk)
    return export, True


def export_document(export: DatasetExport) -> dict:
    """The API's view of an export: ``id``, ``status`` (queued|running|ready|failed), ``images``, ``error``,
    ``waiting`` (what a queued export waits for), ``episodes``, ``frames``, ``bytes``, ``features``, ``fps``,
    ``repoId``, ``lerobotVersion``, ``buildSeconds``,
    ``downloadUrl`` (when ready), ``createdAt``, ``startedAt``, ``finishedAt``."""
    meta = export.meta
    ready = export.status == DatasetExport.Status.READY
    public_id = export.evaluation.public_id
    return {
        "id": export.pk, "status": "failed" if _lost(export) else export.status, "images": meta.get("images", "image"),
        "error": export.error or ("the export's worker stopped before it ended; ask again" if _lost(export) else None),
        "waiting": meta.get("waiting") if export.status == DatasetExport.Status.QUEUED else None,
        **{key: meta.get(key) for key in ("episodes", "frames", "bytes", "features", "fps", "repoId",
                                          "lerobotVersion", "buildSeconds")},
        "downloadUrl": (reverse("evaluations-api:lerobot-dataset-zip", args=[public_id])
                        + f"?images={meta.get('images', 'image')}") if ready else None,
        "createdAt": export.created_at, "startedAt": export.started_at, "finishedAt": export.finished_at,
    }


def _manifest(evaluation: Evaluation, export: DatasetExport, work: Path) -> dict:
    """The writer's manifest (:mod:`.lerobot_writer`), the recorded steps copied from storage into ``work``."""
    episodes, fps = [], None
    for episode in recorded_episodes(evaluation):
        workload = episode.workload
        path = work / "steps" / f"w{workload.index:03d}-e{episode.index:05d}.npz"
        path.parent.mkdir(parents=True, exist_ok=True)
        where = f"episode {episode.index} of tasks[{workload.index}] ({workload.env_ref} {workload.task_id}, id {episode.pk})"
        try:
            with default_storage.open(episode.steps_file.name, "rb") as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
            check_steps_file(path)
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"the recorded steps of {where} cannot be read ({_without_paths(str(exc))}); run the "
                               "evaluation again to record them anew") from exc
        fps = fps or episode.steps_meta.get("fps")
        episodes.append({"file": str(path), "task": workload.instruction or workload.task_id, "meta": {
            "episodeId": episode.pk, "workload": workload.index, "index": episode.index, "model": workload.model_ref,
            "env": workload.env_ref, "taskId": workload.task_id, "seed": episode.seed, "success": episode.success,
            "steps": episode.steps, "reward": episode.reward, "stopCondition": episode.stop_condition,
            "perturbation": episode.perturbation or None}})
    return {"root": str(work / evaluation.public_id), "repoId": f"rlmesh/{evaluation.public_id}",
            "fps": fps or FPS, "images": export.meta.get("images", "image"), "robotType": None, "episodes": episodes,
            "extra": manifest_extra(evaluation)}


def manifest_extra(evaluation: Evaluation) -> dict:
    """What the export's ``meta/rlmesh.json`` says of the evaluation besides its episodes: its id and name, where
    success comes from, and each model × benchmark with a published number and its reproduction verdict
    (``reports.reproduction``)."""
    return {"evaluation": evaluation.public_id, "name": evaluation.label,
            "successFrom": "Episode.success: the platform's verdict (docs/using/request.md)",
            "reproduction": reproduction_rows(evaluation)}


def _write(manifest: dict, work: Path) -> dict:
    """Run the writer on the lerobot venv; its summary. Raises RuntimeError with the writer's words on failure."""
    python = lerobot_python()
    if python is None:
        raise RuntimeError(f"the lerobot environment is not installed; an operator runs {SETUP_SCRIPT}")
    (work / "manifest.json").write_text(json.dumps(manifest))
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, **OFFLINE_ENV, "HOME": str(home), "HF_HOME": str(home / "hf"),
           "HF_LEROBOT_HOME": str(home / "lerobot"), "PYTHONUNBUFFERED": "1", "TQDM_DISABLE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(settings.BASE_DIR), os.environ.get("PYTHONPATH", "")) if p)}
    # The writer dies with its worker process (PR_SET_PDEATHSIG): a killed worker leaves no build running.
    proc = subprocess.run([python, "-m", "evaluations.datasets.lerobot_writer", str(work / "manifest.json")],
                          env=env, cwd=str(work), capture_output=True, text=True, timeout=WRITE_TIMEOUT_SECONDS,
                          preexec_fn=die_with_parent)
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    if proc.returncode == 2 and last.startswith('{"problem"'):
        raise MappingProblem(json.loads(last)["problem"])
    if proc.returncode != 0:
        logger.error("the LeRobot writer failed (exit %s):\n%s", proc.returncode, proc.stderr[-20000:])
        raise RuntimeError(f"the LeRobot writer failed (exit {proc.returncode}): {_user_words(proc.stderr)}; the "
                           "worker's log has the whole traceback")
    return json.loads(last)


def _user_words(stderr: str) -> str:
    """The exception a crashed writer ended with (``ModuleNotFoundError: No module named 'numpy'``), without the
    server's paths and without the warnings libraries print on the way; "no message" when there is none."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    error = next((line for line in reversed(lines) if re.match(r"^[\w.]+(Error|Exception|Interrupt|Exit)\b", line)), "")
    return _without_paths(error)[:500] or "no message"


def _without_paths(text: str) -> str:
    """``text`` with the server's file paths written ``<path>``."""
    return re.sub(r"(?:/[^/\s'\":,]+)+/?", "<path>", text)


def _zip(root: Path, path: Path) -> None:
    """Zip the dataset folder ``root`` under its own name (PNG and parquet stored as they are: already compressed)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for file in sorted(p for p in root.rglob("*") if p.is_file()):
            kind = zipfile.ZIP_STORED if file.suffix in (".parquet", ".mp4", ".png") else zipfile.ZIP_DEFLATED
            archive.write(file, f"{root.name}/{file.relative_to(root)}", compress_type=kind)


def _claim(export_id: int) -> DatasetExport | None:
    """Take a queued export for this worker process (``meta["worker"]``: ``host:pid``, which the reaper watches)."""
    with transaction.atomic():
        export = DatasetExport.objects.select_for_update().filter(pk=export_id, status=DatasetExport.Status.QUEUED).first()
        if export is None:
            return None
        DatasetExport.objects.filter(pk=export_id).update(status=DatasetExport.Status.RUNNING, started_at=timezone.now(),
                                                          meta={**export.meta, "worker": worker_identity()})
    return DatasetExport.objects.select_related("evaluation__organization").get(pk=export_id)


def _has_slot(export: DatasetExport) -> bool:
    """Whether a just-claimed export is among the ``RLMESH_DATASET_EXPORTS_RUNNING`` oldest running exports of the
    site; if not, it goes back to ``queued`` and its message is sent again after
    ``RLMESH_DATASET_EXPORT_RETRY_SECONDS`` (the pool process is free meanwhile). Claimed at once by two workers, the
    older export keeps its slot."""
    limit = max(1, settings.RLMESH_DATASET_EXPORTS_RUNNING)
    oldest = list(DatasetExport.objects.filter(status=DatasetExport.Status.RUNNING).order_by("pk")
                  .values_list("pk", flat=True)[:limit])
    if export.pk in oldest:
        return True
    meta = {k: v for k, v in export.meta.items() if k != "worker"}
    DatasetExport.objects.filter(pk=export.pk, status=DatasetExport.Status.RUNNING).update(
        status=DatasetExport.Status.QUEUED, started_at=None, meta={**meta, "waiting": "for a build slot (the site "
                                                                   f"builds {limit} at once)"})
    dispatch.send_dataset_export(export.pk, countdown=settings.RLMESH_DATASET_EXPORT_RETRY_SECONDS)
    return False


def _fail(export_id: int, reason: str, *, only_running: bool = False) -> bool:
    """Record an export as failed with ``reason`` (without the server's paths); False when it was no longer running
    and ``only_running`` asked for a running one."""
    exports = DatasetExport.objects.filter(pk=export_id)
    if only_running:
        exports = exports.filter(status=DatasetExport.Status.RUNNING)
    return bool(exports.update(status=DatasetExport.Status.FAILED, error=_without_paths(reason)[:4000],
                               finished_at=timezone.now()))


#: The build's scratch folder: ``<RLMESH_RUN_DIR>/dataset-exports/rlmesh-dataset-<export id>-<random>`` (this
#: platform's own run folder: another platform on the host, or a test run beside it, never sweeps it), swept by
#: :func:`reap_lost_exports`.
WORK_PREFIX = "rlmesh-dataset-"


def scratch_root() -> Path:
    """Where this host's export builds keep their scratch folders (created)."""
    root = Path(settings.RLMESH_RUN_DIR) / "dataset-exports"
    root.mkdir(parents=True, exist_ok=True)
    return root


def reap_lost_exports(live: set[str] | None = None) -> list[int]:
    """Fail running exports whose worker process is gone (its liveness record stale, or its pid gone from this host),
    and remove this host's scratch folders of exports that no longer run; the ids failed. Run by the reaper."""
    live = live_identities() if live is None else live
    failed = []
    for export in DatasetExport.objects.filter(kind=KIND, status=DatasetExport.Status.RUNNING):
        worker = str(export.meta.get("worker") or "")
        reason = worker_lost(worker, live) if worker else None
        if reason and _fail(export.pk, f"the worker building it ({worker}) {reason} before it ended; ask again",
                            only_running=True):
            failed.append(export.pk)
    running = set(DatasetExport.objects.filter(status=DatasetExport.Status.RUNNING).values_list("pk", flat=True))
    for folder in scratch_root().glob(f"{WORK_PREFIX}*"):
        number = folder.name[len(WORK_PREFIX):].split("-", 1)[0]
        if folder.is_dir() and number.isdigit() and int(number) not in running:
            shutil.rmtree(folder, ignore_errors=True)
    if failed:
        logger.warning("dataset exports %s failed: their worker was lost", failed)
    return failed


def build_export(export_id: int) -> str | None:
    """Build a queued export (the module docstring); its final status, or None when it was not queued (a duplicate
    delivery). A failure is recorded on the export, never raised."""
    export = _claim(export_id)
    if export is None:
        return None
    if not _has_slot(export):
        return DatasetExport.Status.QUEUED
    evaluation = export.evaluation
    t0 = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix=f"{WORK_PREFIX}{export.pk}-", dir=scratch_root()) as tmp:
            work = Path(tmp)
            manifest = _manifest(evaluation, export, work)
            summary = _write(manifest, work)
            archive = work / f"{evaluation.public_id}-lerobot.zip"
            _zip(Path(manifest["root"]), archive)
            size = archive.stat().st_size
            if size > evaluation.organization.storage_left():
                raise RuntimeError(f"the dataset ({size} bytes) is larger than what is left of the organization's "
                                   "storage quota (RLMESH_ORG_STORAGE_QUOTA_BYTES)")
            with open(archive, "rb") as fh:
                stored = default_storage.save(f"datasets/{evaluation.public_id}/{archive.name}", File(fh, name=archive.name))
    except Exception as exc:  # noqa: BLE001 - the export fails, with its reason, and the worker goes on
        _fail(export.pk, str(exc))
        return DatasetExport.Status.FAILED
    evaluation.organization.add_storage(size)
    meta = {**export.meta, **summary, "bytes": size, "fps": manifest["fps"], "repoId": manifest["repoId"],
            "buildSeconds": round(time.monotonic() - t0, 1)}
    DatasetExport.objects.filter(pk=export.pk).update(status=DatasetExport.Status.READY, file=stored, meta=meta,
                                                      finished_at=timezone.now())
    _drop_older(export)
    return DatasetExport.Status.READY


def _drop_older(export: DatasetExport) -> None:
    """Delete the zips of the evaluation's earlier exports of the same ``images`` mode (the newest ready one of each
    mode is kept and served) and give their bytes back to the organization's quota."""
    images = export.meta.get("images", "image")
    older = DatasetExport.objects.filter(evaluation_id=export.evaluation_id, kind=export.kind, pk__lt=export.pk).exclude(file="")
    for old in (o for o in older if o.meta.get("images", "image") == images):
        default_storage.delete(old.file.name)
        export.evaluation.organization.add_storage(-int(old.meta.get("bytes") or 0))
        DatasetExport.objects.filter(pk=old.pk).update(file="")
