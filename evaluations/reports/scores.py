"""Read-side rollups of an evaluation: scores and metrics (queries here, math in scoring)."""

from __future__ import annotations


from django.db.models import Avg, Count, F, Q, Sum

from .agents import agent_env_versions, agent_metrics
from ..domain import scoring
from ..domain.profiles import task_mean_profile
from ..choices import EpisodeStatus
from ..models import Episode, Evaluation, Shard

__all__ = ["PROFILE_THRESHOLDS", "evaluation_metrics", "evaluation_scores", "performance_profiles",
           "score_cells", "task_label"]


_WORKLOAD = {"model": "workload__model_ref", "env": "workload__env_ref", "taskId": "workload__task_id",
             "scenario": "workload__scenario", "benchmark": "workload__benchmark",
             "perturbation": "workload__perturbation"}


def score_cells(evaluation: Evaluation) -> list[dict]:
    """The evaluation's scoring cells (``domain.scoring``), computed by the database in one aggregate query grouped
    by workload and success source: counts, mean and sum of squared deviations of rewards (from the sum of squares: SQLite's variance aggregate
    fails on an empty group), summed steps, with the
    workload's grouping fields. In workload order; workloads without episodes are left out."""
    completed = Q(status=EpisodeStatus.COMPLETED)
    aggregates = (Episode.objects.filter(evaluation=evaluation).order_by()
                  .values("workload__index", *_WORKLOAD.values(), "success_source")
                  .annotate(completed=Count("id", filter=completed), errors=Count("id", filter=~completed),
                            judged=Count("success", filter=completed),
                            successes=Count("id", filter=completed & Q(success=True)),
                            rewardN=Count("reward", filter=completed), rewardMean=Avg("reward", filter=completed),
                            rewardSq=Sum(F("reward") * F("reward"), filter=completed), steps=Sum("steps", filter=completed)))
    cells = []
    for a in sorted(aggregates, key=lambda a: (a["workload__index"], a["success_source"])):
        n = a["rewardN"]
        key = {field: a[column] for field, column in _WORKLOAD.items()}
        key.update(benchmark=key["benchmark"] or None, perturbation=key["perturbation"] or "none")
        cells.append({**key, "completed": a["completed"], "errors": a["errors"], "judged": a["judged"],
                      "successes": a["successes"], "rewardN": n, "rewardMean": a["rewardMean"] if n else None,
                      "rewardM2": max((a["rewardSq"] or 0.0) - n * (a["rewardMean"] or 0.0) ** 2, 0.0), "steps": a["steps"] or 0,
                      "sources": {a["success_source"]: a["completed"]} if a["success_source"] and a["completed"]
                      else {}})
    return cells


def task_label(row: dict) -> str:
    """A task's name in matrices: its taskId, plus the perturbation when there is one (sweeps stay apart)."""
    p = row.get("perturbation") or "none"
    return row["taskId"] if p == "none" else f"{row['taskId']} · {p}"


#: τ from 0 to 1 in steps of 0.02: where the performance profile is evaluated.
PROFILE_THRESHOLDS = [i / 50 for i in range(51)]
#: Bootstrap budget per model: reps × episodes at most this (2,000 reps up to 2,500 episodes, never under 200).
_PROFILE_DRAWS = 5_000_000


def performance_profiles(cells: list[dict]) -> dict[str, dict]:
    """Per model, the rliable performance profile of its tasks' success rates with the bootstrap band
    (``domain.profiles.task_mean_profile``), from scoring cells (:func:`score_cells`). A task is an env ·
    ``task_label``; only completed episodes with a success verdict count; models without any are left out."""
    by_model = {model: scoring.task_outcomes([c for c in cells if c["model"] == model],
                                             task=lambda c: f"{c['env']} · {task_label(c)}")
                for model in dict.fromkeys(c["model"] for c in cells)}
    profiles = {}
    for model, by_task in by_model.items():
        if not by_task:
            continue
        reps = max(200, min(2000, _PROFILE_DRAWS // sum(len(v) for v in by_task.values())))
        profiles[model] = task_mean_profile(by_task, PROFILE_THRESHOLDS, reps=reps)
    return profiles


def evaluation_scores(evaluation: Evaluation, group_by: str = "task") -> dict:
    """``{"evaluation", "groupBy", "confidence", "groups": [...]}``; each group also says which success
    sources its verdicts came from. Raises ValueError for an unknown ``group_by``."""
    groups = scoring.group_cells(score_cells(evaluation), group_by)
    return {"evaluation": evaluation.public_id, "groupBy": group_by, "confidence": 0.95, "groups": groups}


def _dist(values: list[float]) -> dict:
    return {
        "n": len(values),
        "p50": scoring.percentile(values, 50),
        "p95": scoring.percentile(values, 95),
        "max": max(values) if values else None,
    }


def _has_agent_rollouts(evaluation: Evaluation, eps: list[dict]) -> bool:
    """Whether ``eps`` (values with ``status`` and ``agent``) hold agent rollouts: one has an agent summary, or
    (queried only then) errored ones are on an agent env, such as rollouts whose servers never started."""
    if any(e["agent"] for e in eps):
        return True
    return any(e["status"] == EpisodeStatus.ERROR for e in eps) and evaluation.workloads.filter(
        env_version_id__in=agent_env_versions(evaluation.organization)).exists()


def model_batches(per_shard) -> dict | None:
    """The forward passes of the evaluation's batching model servers by rows (episodes) in them: ``{"size": the
    fixed batch shape, "calls": {rows: count}, "meanRows": float, "meanPassMs": ms of one pass or None}``, from what each shard read of its server when it
    closed (``timings["modelBatches"]``); a server read by several shards counts once, at its fullest reading.
    None when no model server batched."""
    fullest: dict[str, dict] = {}
    for readings in per_shard:
        for r in readings:
            if sum(r["calls"].values()) >= sum(fullest.get(r["server"], {"calls": {}})["calls"].values()):
                fullest[r["server"]] = r
    if not fullest:
        return None
    calls: dict[str, int] = {}
    for r in fullest.values():
        for rows, n in r["calls"].items():
            calls[rows] = calls.get(rows, 0) + n
    total = sum(calls.values())
    return {"size": max(r.get("size") or 0 for r in fullest.values()) or None,
            "calls": dict(sorted(calls.items(), key=lambda kv: int(kv[0]))),
            "meanRows": sum(int(k) * n for k, n in calls.items()) / total if total else None,
            "meanPassMs": (round(1000 * sum(r.get("seconds") or 0.0 for r in fullest.values()) / total, 2)
                           if total and all(r.get("seconds") for r in fullest.values()) else None)}


def evaluation_metrics(evaluation: Evaluation) -> dict:
    """Throughput and timing rollups over every task.

    ``episodesPerSecond``/``stepsPerSecond`` over the wall time from the first episode's start to the
    last one's end; per-step ``latencyMs`` p50/p95 of model predict and env step (from per-episode
    histograms); ``queueWaitSeconds`` (shard queued → started); ``serverStartSeconds`` per server kind;
    ``modelBatches``: the forward passes of batching model servers by episodes per pass (:func:`model_batches`);
    ``videos``: how many episodes have a video, their size (bytes) and encode/render time (ms) per episode;
    ``agent``: token usage and endpoint time of agent rollouts, per run and per task (null without any recorded
    rollout; a rollout whose servers never started counts, with nothing measured).
    """
    eps = list(
        Episode.objects.filter(evaluation=evaluation).values(
            "status", "steps", "started_at", "finished_at", "latency", "wall_ms", "video", "video_meta", "agent"
        )
    )
    videos = [e["video_meta"] for e in eps if e["video"]]
    completed = [e for e in eps if e["status"] == EpisodeStatus.COMPLETED]
    starts = [e["started_at"] for e in eps if e["started_at"]]
    ends = [e["finished_at"] for e in eps if e["finished_at"]]
    wall = (max(ends) - min(starts)).total_seconds() if starts and ends else None
    steps = sum(e["steps"] for e in completed)
    predict = scoring.histogram_merge(e["latency"].get("predict", {}) for e in completed)
    step = scoring.histogram_merge(e["latency"].get("step", {}) for e in completed)
    shards = list(Shard.objects.filter(evaluation=evaluation).values("queued_at", "started_at", "timings"))
    waits = [(s["started_at"] - s["queued_at"]).total_seconds() for s in shards if s["started_at"]]
    env_starts = [t for s in shards for t in s["timings"].get("envStartSeconds", [])]
    model_starts = [t for s in shards for t in s["timings"].get("modelStartSeconds", [])]
    batches = model_batches(s["timings"].get("modelBatches", []) for s in shards)
    errors = sum(1 for e in eps if e["status"] == EpisodeStatus.ERROR)
    return {
        "evaluation": evaluation.public_id,
        "episodes": len(eps),
        "errors": errors,
        "steps": steps,
        "wallSeconds": wall,
        "episodesPerSecond": (len(eps) / wall) if wall else None,
        "stepsPerSecond": (steps / wall) if wall else None,
        "meanEpisodeSeconds": (sum(e["wall_ms"] or 0 for e in completed) / len(completed) / 1000) if completed else None,
        "latencyMs": {
            "predict": {"p50": scoring.histogram_percentile(predict, 50), "p95": scoring.histogram_percentile(predict, 95)},
            "envStep": {"p50": scoring.histogram_percentile(step, 50), "p95": scoring.histogram_percentile(step, 95)},
        },
        "queueWaitSeconds": _dist(waits),
        "serverStartSeconds": {"env": _dist(env_starts), "model": _dist(model_starts)},
        "modelBatches": batches,
        "videos": {
            "count": len(videos),
            "totalBytes": sum(v.get("bytes", 0) for v in videos),
            "bytesPerEpisode": _dist([v["bytes"] for v in videos if "bytes" in v]),
            "encodeMsPerEpisode": _dist([v["encodeMs"] for v in videos if "encodeMs" in v]),
            "renderMsPerEpisode": _dist([v["renderMs"] for v in videos if "renderMs" in v]),
        },
        "agent": agent_metrics(evaluation) if _has_agent_rollouts(evaluation, eps) else None,
    }
