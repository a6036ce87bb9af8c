"""Read-side rollups of an evaluation: scores and metrics (queries here, math in scoring)."""

from __future__ import annotations


from .agent_reports import agent_metrics
from .domain import scoring
from .domain.profiles import task_mean_profile
from .choices import EpisodeStatus
from .models import Episode, Evaluation, Shard

__all__ = ["PROFILE_THRESHOLDS", "evaluation_metrics", "evaluation_scores", "episode_rows", "performance_profiles",
           "task_label"]


def episode_rows(evaluation: Evaluation) -> list[dict]:
    """Every episode of the evaluation as a plain dict with its workload's grouping fields."""
    rows = []
    for r in Episode.objects.filter(evaluation=evaluation).values(
        "status", "success", "reward", "steps", "success_source",
        "workload__model_ref", "workload__env_ref", "workload__task_id", "workload__scenario",
        "workload__benchmark", "workload__perturbation",
    ):
        rows.append(
            {
                "status": r["status"],
                "success": r["success"],
                "reward": r["reward"],
                "steps": r["steps"],
                "successSource": r["success_source"],
                "model": r["workload__model_ref"],
                "env": r["workload__env_ref"],
                "taskId": r["workload__task_id"],
                "scenario": r["workload__scenario"],
                "benchmark": r["workload__benchmark"] or None,
                "perturbation": r["workload__perturbation"] or "none",
            }
        )
    return rows


def task_label(row: dict) -> str:
    """A task's name in matrices: its taskId, plus the perturbation when there is one (sweeps stay apart)."""
    p = row.get("perturbation") or "none"
    return row["taskId"] if p == "none" else f"{row['taskId']} · {p}"


#: τ from 0 to 1 in steps of 0.02: where the performance profile is evaluated.
PROFILE_THRESHOLDS = [i / 50 for i in range(51)]
#: Bootstrap budget per model: reps × episodes at most this (2,000 reps up to 2,500 episodes, never under 200).
_PROFILE_DRAWS = 5_000_000


def performance_profiles(rows: list[dict]) -> dict[str, dict]:
    """Per model, the rliable performance profile of its tasks' success rates with the bootstrap band
    (``domain.profiles.task_mean_profile``). A task is an env · ``task_label``; only completed episodes with a
    success verdict count; models without any are left out."""
    by_model: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        if r["status"] == EpisodeStatus.COMPLETED and r["success"] is not None:
            task = f"{r['env']} · {task_label(r)}"
            by_model.setdefault(r["model"], {}).setdefault(task, []).append(1.0 if r["success"] else 0.0)
    profiles = {}
    for model, by_task in by_model.items():
        reps = max(200, min(2000, _PROFILE_DRAWS // sum(len(v) for v in by_task.values())))
        profiles[model] = task_mean_profile(by_task, PROFILE_THRESHOLDS, reps=reps)
    return profiles


def evaluation_scores(evaluation: Evaluation, group_by: str = "task") -> dict:
    """``{"evaluation", "groupBy", "confidence", "groups": [...]}``; each group also says which success
    sources its verdicts came from. Raises ValueError for an unknown ``group_by``."""
    groups = scoring.group_scores(episode_rows(evaluation), group_by)
    return {"evaluation": evaluation.public_id, "groupBy": group_by, "confidence": 0.95, "groups": groups}


def _dist(values: list[float]) -> dict:
    return {
        "n": len(values),
        "p50": scoring.percentile(values, 50),
        "p95": scoring.percentile(values, 95),
        "max": max(values) if values else None,
    }


def evaluation_metrics(evaluation: Evaluation) -> dict:
    """Throughput and timing rollups over every task.

    ``episodesPerSecond``/``stepsPerSecond`` over the wall time from the first episode's start to the
    last one's end; per-step ``latencyMs`` p50/p95 of model predict and env step (from per-episode
    histograms); ``queueWaitSeconds`` (shard queued → started); ``serverStartSeconds`` per server kind;
    ``videos``: how many episodes have a video, their size (bytes) and encode/render time (ms) per episode;
    ``agent``: token usage and endpoint time of agent rollouts, per run and per task (null without any).
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
        "videos": {
            "count": len(videos),
            "totalBytes": sum(v.get("bytes", 0) for v in videos),
            "bytesPerEpisode": _dist([v["bytes"] for v in videos if "bytes" in v]),
            "encodeMsPerEpisode": _dist([v["encodeMs"] for v in videos if "encodeMs" in v]),
            "renderMsPerEpisode": _dist([v["renderMs"] for v in videos if "renderMs" in v]),
        },
        "agent": agent_metrics(evaluation) if any(e["agent"] for e in eps) else None,
    }
