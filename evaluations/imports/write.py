"""The last step of an import: one transaction writes the evaluation, its workloads and episodes."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ..choices import EvaluationStatus
from ..models import Episode, Evaluation, Workload
from ..runs.lifecycle import log
from .document import UNSEEDED, BundlePlan

__all__ = ["summary", "write_evaluation"]


def summary(doc: dict) -> dict:
    """The document without its per-episode arrays (they live in Episode rows)."""
    out = {k: v for k, v in doc.items() if k != "workloads"}
    out["workloads"] = [
        {**{k: v for k, v in w.items() if k != "episodes"}, "episodes": [], "episodesOmitted": len(w.get("episodes") or [])}
        for w in doc["workloads"]
    ]
    return out


def write_evaluation(plan: BundlePlan, *, raw: bytes, public_id: str, organization, user, api_key, name: str, file_name: str, size: int, sha256: str) -> Evaluation:
    doc = plan.doc
    now = timezone.now()
    verbatim = len(raw) <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if verbatim:
        request_raw, request = raw.decode("utf-8-sig"), doc
    else:
        request = summary(doc)
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
        organization.add_storage(sum(e.fields.get("video_meta", {}).get("bytes", 0) for w in plan.workloads for e in w.episodes))
        log(
            evaluation,
            f"imported {file_name or 'a result bundle'} (sha256 {sha256[:12]}…, {size} bytes): "
            f"{len(plan.workloads)} workloads, {n_episodes} episodes, {n_videos} videos",
        )
    return evaluation

