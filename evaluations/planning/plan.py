"""What planning produces: the resolved models and tasks of a request, the workloads they expand into (every model ×
every task), the effective config recorded with the evaluation, and estimates. Each value is computed once, on the
planned task or model, and both the workload rows and the config read it from there."""

from __future__ import annotations

import json

import math
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from ..domain.sample_sizes import sample_size_estimate
from ..domain.scoring import split_task_id
from ..prebuilt.catalog import declared_pace
from ..services.image_versions import ResolvedImage, recorded_batch
from .horizons import env_horizon
from .redaction import redacted
from .rendering import concurrency_cap, observation_kwargs

__all__ = ["Plan", "PlannedModel", "PlannedTask", "PlannedWorkload", "shard_ranges"]


def shard_ranges(episodes: int, workers: int, max_per_shard: int) -> list[tuple[int, int]]:
    """Split ``range(episodes)`` into contiguous ``[start, stop)`` ranges.

    At least ``workers`` ranges (so that many can run in parallel), none longer than ``max_per_shard``,
    sizes differing by at most one. The union is always ``range(episodes)``, so sharding never changes
    which episodes (and seeds) run.
    """
    count = min(episodes, max(workers, math.ceil(episodes / max_per_shard)))
    base, extra = divmod(episodes, count)
    ranges, start = [], 0
    for i in range(count):
        stop = start + base + (1 if i < extra else 0)
        ranges.append((start, stop))
        start = stop
    return ranges


def live_workers() -> int:
    """Worker pool processes (on any host) seen alive within ``RLMESH_WORKER_LIVENESS_TIMEOUT`` seconds."""
    from django.utils import timezone

    from ..models import WorkerProcess

    since = timezone.now() - timezone.timedelta(seconds=settings.RLMESH_WORKER_LIVENESS_TIMEOUT)
    return WorkerProcess.objects.filter(last_seen__gte=since).count()


def live_warnings() -> list[str]:
    """Warnings about the platform now, not about the request: shown where a request is previewed or answered,
    never stored with the evaluation (a field case: "no worker has been seen" stayed on evaluations that completed)."""
    idle = no_worker_warning()
    return [idle] if idle else []


def no_worker_warning() -> str | None:
    """A warning when no worker is alive to run what is submitted (None when one is, or tasks run eagerly)."""
    if settings.CELERY_TASK_ALWAYS_EAGER or live_workers():
        return None
    return (f"no worker has been seen in the last {settings.RLMESH_WORKER_LIVENESS_TIMEOUT:g} s: the evaluation "
            "waits in the queue until one starts (make demo starts one; the manual, /docs/running/production/, says how to run more)")


def _pool_size() -> int:
    """Shards the worker pool runs at once: the worker processes seen alive within the liveness timeout, else
    ``RLMESH_ESTIMATED_PARALLEL_SHARDS`` (no worker has announced itself yet)."""
    return live_workers() or settings.RLMESH_ESTIMATED_PARALLEL_SHARDS


def _workload_seconds(w: PlannedWorkload) -> float:
    """Seconds one workload takes on one shard slot, at its env's declared pace (``catalog.declared_pace``)."""
    t = w.task
    pace = declared_pace(t.env.version)
    images = w.env_kwargs.get("cameras") not in (None, "none")
    rate = pace.get("imageStepsPerSecond" if images else "stepsPerSecond") or settings.RLMESH_ESTIMATED_STEPS_PER_SECOND
    rate = min(rate, settings.RLMESH_ESTIMATED_STEPS_PER_SECOND)
    render = pace.get("renderSeconds", settings.RLMESH_ESTIMATED_RENDER_SECONDS)
    return (len(t.shards) * pace.get("startSeconds", 0.0) + t.episodes * pace.get("resetSeconds", 0.0)
            + t.episodes * t.step_limit / rate + t.recorded_episodes * t.step_limit * render)


def _memory_parallel(t: PlannedTask) -> float:
    """How many of ``t``'s env servers the live worker hosts' memory admits at once (``runtime.memory``); inf for an
    env that declares no memory."""
    from ..models import WorkerProcess

    cap = concurrency_cap(t.env)
    if cap is None:
        return math.inf
    since = timezone.now() - timezone.timedelta(seconds=settings.RLMESH_WORKER_LIVENESS_TIMEOUT)
    hosts = WorkerProcess.objects.filter(last_seen__gte=since).order_by().values("hostname").distinct().count()
    return cap * max(1, hosts)


@dataclass(frozen=True)
class PlannedModel:
    """A model entry of the request, resolved to a usable image version."""

    image: ResolvedImage
    #: ``envVars`` as requested (recorded in the config); only container images receive them (``env_vars``).
    requested_env_vars: dict

    @property
    def env_vars(self) -> dict:
        v = self.image.version  # a model car runs in the platform's own LeRobot server, not in its image
        return self.requested_env_vars if v.source.startswith("oci://") and not v.lerobot else {}

    def secret(self) -> str:
        """The model server's secret as stored (``Workload.model_secret``, encrypted): none but an endpoint's key."""
        return ""

    def config(self) -> dict:
        v = self.image.version
        files = ((v.checkpoints.get(self.image.checkpoint) or {}).get("lerobot", {}) if self.image.checkpoint
                 else v.lerobot or {})
        return {"model": self.image.reference, "repository": v.repository.path, "checkpoint": self.image.checkpoint,
                "digest": v.digest, "source": v.source, "envVars": self.env_vars,
                # Which checkpoint ran: the SHA-256 of its files (an installed LeRobot checkpoint's).
                **({"checkpointSha256": files["sha256"]} if files.get("sha256") else {}),
                # The batch shape of a batching model server: it fixes the episode's bits (prebuilt.lerobot.batching).
                **({"batch": recorded_batch(self.image.load_kwargs)} if recorded_batch(self.image.load_kwargs) else {}),
                # Requested but not applied (a trusted source runs on the worker host): named, so the config is true.
                **({"envVarsIgnored": sorted(self.requested_env_vars)} if self.requested_env_vars and not self.env_vars
                   else {})}


@dataclass(frozen=True)
class PlannedTask:
    """A task of the request, checked against its env: the scenario it names, its make kwargs and its shards."""

    env: ResolvedImage
    #: The scenario's id when the env has a catalog (a ``<benchmark>/<index>`` task id is resolved to it).
    task_id: str
    scenario: dict | None
    perturbation: str
    record: str
    episodes: int
    seed: int
    #: Parallel shards asked for, at most ``episodes``.
    workers: int
    max_steps: int | None
    #: The env's make kwargs: the task's ``params``, the scenario's own params, an env-side perturbation.
    env_kwargs: dict
    metadata: dict = field(default_factory=dict)
    #: The task id as the request wrote it (differs from ``task_id`` for a scenario index).
    requested_task_id: str = ""
    #: What defines success (``planning.tasks.success_criterion``): a criterion plus ``declaredBy``, or None.
    success_criterion: dict | None = None
    #: The env's declared make parameters (names), for what the planner sets per model (``planning.rendering``).
    declared_params: tuple[str, ...] = ()
    #: Which episodes keep their steps for a dataset export (``recordSteps``; the modes of ``record``).
    record_steps: str = "none"

    @property
    def benchmark(self) -> str:
        return split_task_id(self.task_id)[0] or ""

    @property
    def scenario_name(self) -> str:
        return split_task_id(self.task_id)[1]

    @property
    def shards(self) -> list[tuple[int, int]]:
        return shard_ranges(self.episodes, self.workers, settings.RLMESH_MAX_EPISODES_PER_SHARD)

    @property
    def step_limit(self) -> int:
        """Steps an episode may take at most: ``max_steps``, else the env's own limit (Gymnasium's time limits for
        the classic scenarios, Meta-World's 500; an unknown env counts 1,000)."""
        return self.max_steps or env_horizon(self.scenario, self.env_kwargs) or 1000

    @property
    def recorded_episodes(self) -> int:
        """Upper bound of the episodes that render frames (``failures`` renders them all)."""
        if self.record in ("all", "failures"):
            return self.episodes
        if self.record.startswith("first:"):
            return min(self.episodes, int(self.record.split(":", 1)[1]))
        return 0

    def sample_size(self) -> dict:
        """What the task's episode count buys (``domain.sample_sizes``, worst case p = 0.5): ``{"env", "taskId",
        "perturbation", "sampleSize": {"episodes", "p", "halfWidth", "episodesFor5pp", "episodesFor10pp"},
        "warning"}``, the warning set below ``MIN_EPISODES_WARNING`` episodes."""
        estimate = sample_size_estimate(self.episodes)
        warning = estimate.pop("warning")
        return {"env": self.env.reference, "taskId": self.task_id, "perturbation": self.perturbation or "none",
                "sampleSize": estimate, "warning": warning}

    def config(self) -> dict:
        v = self.env.version
        return {
            "env": self.env.reference, "repository": v.repository.path, "digest": v.digest, "source": v.source,
            "taskId": self.task_id, **({"requestedTaskId": self.requested_task_id}
                                       if self.requested_task_id and self.requested_task_id != self.task_id else {}),
            "makeKwargs": self.env_kwargs, "successCriterion": self.success_criterion,
            "episodes": self.episodes, "seed": self.seed, "seeds": list(range(self.seed, self.seed + self.episodes)),
            "workers": self.workers, "maxSteps": self.max_steps, "perturbation": self.perturbation, "record": self.record,
            "recordSteps": self.record_steps,
        }


@dataclass(frozen=True)
class PlannedWorkload:
    """One model × task pair: the Workload row to write and its shards."""

    model: PlannedModel
    task: PlannedTask

    @property
    def episodes(self) -> int:
        return self.task.episodes

    @property
    def env_kwargs(self) -> dict:
        """The task's make kwargs plus what this model needs the env to render or expose (cameras, privileged state)."""
        t = self.task
        return {**t.env_kwargs, **observation_kwargs(self.model.image, set(t.declared_params), t.env_kwargs,
                                                     record_steps=t.record_steps != "none")}

    def row_fields(self) -> dict:
        """The :class:`~evaluations.models.Workload` fields (without ``evaluation`` and ``index``)."""
        m, t = self.model.image, self.task
        return {
            "model_ref": m.reference, "model_version": m.version, "model_checkpoint": m.checkpoint or "",
            "env_ref": t.env.reference, "env_version": t.env.version, "task_id": t.task_id, "benchmark": t.benchmark,
            "scenario": t.scenario_name, "perturbation": t.perturbation, "record": t.record, "record_steps": t.record_steps,
            "episodes": t.episodes,
            "seed": t.seed, "workers": t.workers, "max_steps": t.max_steps, "env_vars": self.model.env_vars,
            "env_kwargs": self.env_kwargs, "model_kwargs": m.load_kwargs, "model_secret": self.model.secret(),
            "success_criterion": t.success_criterion,
            "metadata": t.metadata,
        }

    def summary(self) -> dict:
        t = self.task
        return {"model": self.model.image.reference, "env": t.env.reference, "taskId": t.task_id,
                "episodes": t.episodes, "workers": t.workers, "shards": len(t.shards),
                "seeds": [t.seed, t.seed + t.episodes - 1]}


@dataclass
class Plan:
    """A validated request, ready to write: ``data`` is the request object as received."""

    data: dict
    name: str
    tags: dict
    metadata: dict
    timeout_seconds: float | None
    models: list[PlannedModel]
    tasks: list[PlannedTask]
    warnings: list[str]

    @property
    def workloads(self) -> list[PlannedWorkload]:
        """Every model × every task, models outermost (the workload index order)."""
        return [PlannedWorkload(m, t) for m in self.models for t in self.tasks]

    @property
    def total_episodes(self) -> int:
        return len(self.models) * sum(t.episodes for t in self.tasks)

    @property
    def config(self) -> dict:
        """The effective configuration recorded with the evaluation: resolved digests, defaults, seeds, timeouts."""
        timeout = self.timeout_seconds
        return {
            "models": [m.config() for m in self.models],
            "tasks": [t.config() for t in self.tasks],
            "timeoutSeconds": timeout,
            "episodeTimeoutSeconds": min(settings.RLMESH_EPISODE_TIMEOUT, timeout or math.inf),
            "requestTimeoutSeconds": settings.RLMESH_REQUEST_TIMEOUT,
            "runtime": {"rlmesh": "0.1.0", "workflowEdition": settings.RLMESH_WORKFLOW_EDITION},
        }

    def estimates(self) -> dict:
        """Sizes and a rough duration, from each env's declared pace (``PACE_LABEL``: server start, reset, steps/s
        unrendered and with image observations, seconds per video frame), else the configured sustained steps/s per
        shard and ``RLMESH_ESTIMATED_RENDER_SECONDS`` per rendered frame (MuJoCo on CPU: 75–300 ms at 128²,
        spec/ENVS.md §2; CartPole ~9 ms); divided by the shards that run at once (the pool, and for an env that
        declares its memory, what the hosts' memory admits)."""
        n = len(self.models)
        shards = n * sum(len(t.shards) for t in self.tasks)
        steps = n * sum(t.episodes * t.step_limit for t in self.tasks)
        rendered = n * sum(t.recorded_episodes * t.step_limit for t in self.tasks)
        parallel = max(1, min(shards, _pool_size(), *(_memory_parallel(t) for t in self.tasks)))
        seconds = sum(_workload_seconds(w) for w in self.workloads)
        return {
            "episodes": self.total_episodes, "workloads": n * len(self.tasks), "shards": shards, "maxEnvSteps": steps,
            "maxRenderedFrames": rendered, "estimatedSecondsUpperBound": round(seconds / parallel, 1),
            "sampleSizes": [t.sample_size() for t in self.tasks],
        }

    def sample_size_warnings(self) -> list[str]:
        """The preview's warnings for tasks with too few episodes for a useful interval (not recorded on submit)."""
        return [f"tasks[{i}] ({t.task_id}): {s['warning']}" for i, t in enumerate(self.tasks)
                if (s := t.sample_size())["warning"]]

    def workload_summaries(self) -> list[dict]:
        return [w.summary() for w in self.workloads]

    def stored_raw(self, raw: str) -> str:
        """The request body to store (``Evaluation.request_raw``): ``raw`` as received, unless it holds a policy
        server's key, which is never stored in the clear: then the request with every ``endpoint.key`` ``***``."""
        safe = redacted(self.data)
        return raw if safe == self.data else json.dumps(safe, indent=2, ensure_ascii=False)

    def evaluation_fields(self) -> dict:
        """The :class:`~evaluations.models.Evaluation` fields the plan decides (not who submitted it)."""
        return {"name": self.name, "request": redacted(self.data), "config": self.config, "tags": self.tags,
                "metadata": self.metadata, "warnings": self.warnings, "timeout_seconds": self.timeout_seconds,
                "total_episodes": self.total_episodes}
