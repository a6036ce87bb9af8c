"""What one episode produced, as the Episode fields :func:`evaluations.runs.lifecycle.record_episode` writes, built
with the shared outcome rules of :mod:`evaluations.domain.outcomes`."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils import timezone

from ..choices import EpisodeStatus, StopCondition
from ..domain.outcomes import episode_success, stop_condition
from ..domain.text import nul_free
from ..models import Workload
from ..prebuilt.catalog import trajectory_comparable

__all__ = ["EpisodeOutcome", "close_quietly", "completed_fields", "error_fields"]


@dataclass
class EpisodeOutcome:
    """What one episode produced, ready for :func:`evaluations.runs.lifecycle.record_episode`."""

    fields: dict = field(default_factory=dict)
    #: True when the servers should be restarted before the next episode (crash, hang).
    restart: bool = False
    #: Why the episode should run again instead of being recorded (it broke for a reason outside the env and the
    #: model: a shared server died with its owner process); empty when it is to be recorded.
    rerun: str = ""


def error_fields(base: dict, message: str, *, wall_ms: float | None = None) -> dict:
    """The Episode fields of an errored episode: ``base`` (seed, started_at, …) plus status ``error``, stop condition
    ``error``, the message (cut to 4,000 characters) and the wall time in milliseconds."""
    return {
        **base,
        "status": EpisodeStatus.ERROR,
        "stop_condition": StopCondition.ERROR,
        "error": nul_free(message[:4000]),
        "wall_ms": wall_ms,
        "finished_at": timezone.now(),
    }


def completed_fields(base: dict, *, reward: float, steps: int, terminated: bool, truncated: bool, flag: bool | None,
                     workload: Workload, wall_s: float, wall_cap: float | None, episode_s: float | None = None,
                     digest: str = "", **timing) -> dict:
    """The Episode fields of a finished episode: stop condition and success decided by the shared outcome rules.

    ``wall_s`` is the episode's wall time as the platform measured it (seconds); ``episode_s`` the duration rlmesh
    compared with ``wall_cap`` when it enforced the cap (defaults to ``wall_s``). ``timing`` adds ``predict_ms``,
    ``step_ms`` (means, ms) and ``latency`` (histograms). ``digest`` is the episode's trajectory digest
    (``domain.trajectory``, 64 hex characters): comparable unless the env declares its trajectories timing-dependent
    (``prebuilt.catalog.trajectory_comparable``) or the wall-time cap ended the episode (where a clock cut it)."""
    stop = stop_condition(terminated=terminated, truncated=truncated, steps=steps, max_steps=workload.max_steps,
                          wall_s=wall_s if episode_s is None else episode_s, wall_cap=wall_cap)
    success, source = episode_success(env_flag=flag, criterion=workload.success_criterion, terminated=terminated,
                                      reward=reward, stop_condition=stop, steps=steps)
    return {
        **base, "status": EpisodeStatus.COMPLETED, "reward": float(reward), "success": success, "success_source": source,
        "steps": steps, "terminated": terminated, "truncated": truncated, "stop_condition": stop,
        "wall_ms": wall_s * 1000, **timing, "finished_at": timezone.now(),
        "trajectory_digest": digest,
        "digest_comparable": (trajectory_comparable(workload.env_version) and stop != StopCondition.WALL_TIME)
        if digest else None,
    }


def close_quietly(client) -> None:
    """Detach an env client; a server that already died cannot make this fail the episode twice."""
    if client is not None:
        try:
            client.close()
        except Exception:  # noqa: BLE001
            pass
