"""Run one shard: claim it, start its env and model servers, run its episodes, record each, finalize.

Called by the ``evaluations.run_shard`` Celery task with a shard id. Idempotent: a shard that is not
``queued`` is left alone, and episodes already recorded are skipped, so a re-delivered or re-queued
shard neither duplicates nor loses an episode.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from django.core.files.storage import default_storage
from django.db import connection
from django.utils import timezone

from .. import perturbations
from ..choices import EpisodeStatus, EvaluationStatus, LogLevel, ShardStatus, StopCondition
from ..models import Episode, Evaluation, Shard, Workload
from ..runtime import RuntimeBackendError, ServedEndpoint, ServerSpec, backend_for
from ..perturbations import Perturber
from ..scoring import episode_success, histogram_add
from . import recording
from .evaluations import claim_shard, finalize_evaluation, heartbeat, log, record_episode

__all__ = ["EpisodeOutcome", "ShardRunner", "run_shard"]

logger = logging.getLogger(__name__)

#: rlmesh's built-in bound on steps per episode when no cap is given.
RLMESH_STEP_BOUND = 100_000
#: After this many consecutive failed server starts, the shard's remaining episodes are recorded as errors.
MAX_START_FAILURES = 2
HEARTBEAT_SECONDS = 10.0


@dataclass
class EpisodeOutcome:
    """What one episode produced, ready for :func:`record_episode`."""

    fields: dict = field(default_factory=dict)
    #: True when the servers should be restarted before the next episode (crash, hang).
    restart: bool = False


class _LatencyHooks:
    """Collects per-step predict/step latencies into log-bucketed histograms (see scoring)."""

    def __init__(self):
        import rlmesh

        class Hooks(rlmesh.RunHooks):
            def __init__(inner):
                super().__init__()
                inner.predict: dict[str, int] = {}
                inner.step: dict[str, int] = {}

            def on_step(inner, event):
                histogram_add(inner.predict, event.predict_ms)
                histogram_add(inner.step, event.step_ms)

        self.hooks = Hooks()


def _close_quietly(client) -> None:
    """Detach an env client; a server that already died cannot make this fail the episode twice."""
    if client is not None:
        try:
            client.close()
        except Exception:  # noqa: BLE001
            pass


def _stop_condition(*, terminated: bool, truncated: bool, steps: int, max_steps: int | None, wall_s: float, wall_cap: float | None) -> str:
    if terminated:
        return StopCondition.TERMINATED
    if truncated:
        if max_steps is not None and steps >= max_steps:
            return StopCondition.MAX_STEPS
        if wall_cap is not None and wall_s >= wall_cap:
            return StopCondition.WALL_TIME
        if steps >= RLMESH_STEP_BOUND:
            return StopCondition.STEP_BOUND
        return StopCondition.TIME_LIMIT
    return StopCondition.TIME_LIMIT


class ShardRunner:
    """Owns the env and model servers of one shard and runs its episodes one at a time."""

    def __init__(self, shard: Shard):
        self.shard = shard
        self.workload: Workload = shard.workload
        self.evaluation: Evaluation = shard.evaluation
        cfg = self.evaluation.config
        self.request_timeout = float(cfg.get("requestTimeoutSeconds", 30.0))
        self.episode_timeout = float(cfg.get("episodeTimeoutSeconds", 600.0))
        self.env: ServedEndpoint | None = None
        self.model: ServedEndpoint | None = None
        self.random_model = self.workload.model_version.source == "builtin:random"
        self.perturbation = perturbations.parse(self.workload.perturbation)
        self.start_failures = 0
        self.last_start_error = ""

    # ----------------------------------------------------------- servers
    def _name(self, kind: str) -> str:
        return f"{self.evaluation.public_id}-w{self.workload.index}-s{self.shard.index}-{kind}"

    def ensure_servers(self) -> None:
        """Start (or restart) whatever server is not running. Raises RuntimeBackendError on failure."""
        timings = dict(self.shard.timings)
        if self.env is None or not self.env.alive():
            if self.env is not None:
                log(self.evaluation, f"env server died; restarting. Last output:\n{self.env.log_tail()}", level=LogLevel.WARNING, source="runtime", shard=self.shard)
                self.env.stop()
            self.env = None
            spec = ServerSpec("env", self.workload.env_version.source, dict(self.workload.env_kwargs))
            self.env = backend_for(spec.source).start(spec, name=self._name("env"))
            timings.setdefault("envStartSeconds", []).append(round(self.env.ready_seconds, 3))
            log(self.evaluation, f"env server {self.workload.env_ref} ({self.workload.task_id}) ready in {self.env.ready_seconds:.2f} s at {self.env.address}", source="runtime", shard=self.shard)
        if not self.random_model and (self.model is None or not self.model.alive()):
            if self.model is not None:
                log(self.evaluation, f"model server died; restarting. Last output:\n{self.model.log_tail()}", level=LogLevel.WARNING, source="runtime", shard=self.shard)
                self.model.stop()
            self.model = None
            spec = ServerSpec(
                "model", self.workload.model_version.source, dict(self.workload.model_kwargs), dict(self.workload.env_vars)
            )
            self.model = backend_for(spec.source).start(spec, name=self._name("model"))
            timings.setdefault("modelStartSeconds", []).append(round(self.model.ready_seconds, 3))
            log(self.evaluation, f"model server {self.workload.model_ref} ready in {self.model.ready_seconds:.2f} s at {self.model.address}", source="runtime", shard=self.shard)
        if timings != self.shard.timings:
            self.shard.timings = timings
            Shard.objects.filter(pk=self.shard.pk).update(timings=timings)

    def restart(self) -> None:
        self.close()

    def close(self) -> None:
        for kind, server in (("env", self.env), ("model", self.model)):
            if server is not None:
                if server.__class__.__name__ == "Container":
                    # A container's output is gone once it is removed: keep its last lines in the Logs.
                    tail = server.log_tail(20).strip()
                    if tail:
                        log(self.evaluation, f"{kind} container output (last lines):\n{tail}", source="container", shard=self.shard)
                server.stop()
        self.env = self.model = None

    # ----------------------------------------------------------- episodes
    def run_episode(self, index: int, *, wall_cap: float) -> EpisodeOutcome:
        """Run episode ``index`` (seed ``workload.seed + index``) and return its outcome; never raises for
        an env/model failure — that becomes an ``error`` outcome."""
        import rlmesh

        seed = self.workload.seed_for(index)
        base = {"seed": seed, "started_at": timezone.now()}
        try:
            self.ensure_servers()
            self.start_failures = 0
        except RuntimeBackendError as exc:
            self.start_failures += 1
            self.last_start_error = f"{exc}" + (f"\n{exc.log_tail}" if exc.log_tail else "")
            log(self.evaluation, f"server start failed: {self.last_start_error}", level=LogLevel.ERROR, source="runtime", shard=self.shard)
            self.close()
            return EpisodeOutcome(self._error_fields(base, f"server start failed: {exc}"), restart=True)

        hooks = _LatencyHooks().hooks
        base["started_at"] = timezone.now()  # the episode starts once its servers are ready
        base["perturbation"] = self.perturbation.as_dict() if self.perturbation.name != "none" else {}
        if self.perturbation.side == "driver" and self.perturbation.name != "none" or recording.renders(self.workload.record, index):
            return self._run_session(index, seed, base, wall_cap=wall_cap)
        t0 = time.monotonic()
        env_client = None
        try:
            if self.random_model:
                env_client = rlmesh.numpy.RemoteEnv(self.env.address, connect_timeout_seconds=10, request_timeout_seconds=self.request_timeout)
                space = env_client.action_space
                space.seed(seed)
                model = rlmesh.numpy.Model(lambda obs: space.sample())
            else:
                env_client = rlmesh.RemoteEnv(self.env.address, connect_timeout_seconds=10, request_timeout_seconds=self.request_timeout)
                model = rlmesh.RemoteModel(self.model.address, connect_timeout_seconds=10, request_timeout_seconds=self.request_timeout)
            result = rlmesh.run(
                model,
                env_client,
                seeds=[seed],
                max_episode_steps=self.workload.max_steps,
                max_episode_seconds=wall_cap,
                hooks=hooks,
            )
        except Exception as exc:  # noqa: BLE001 - any env/model failure ends this episode, not the shard
            return self._failed(base, exc, t0)
        finally:
            _close_quietly(env_client)
        ep = result.episodes[0]
        stop = _stop_condition(
            terminated=ep.terminated, truncated=ep.truncated, steps=ep.steps,
            max_steps=self.workload.max_steps, wall_s=ep.duration_s, wall_cap=wall_cap,
        )
        success, source = episode_success(
            env_flag=ep.success, criterion=self.workload.success_criterion,
            terminated=ep.terminated, reward=ep.reward, stop_condition=stop, steps=ep.steps,
        )
        return EpisodeOutcome(
            {
                **base,
                "status": EpisodeStatus.COMPLETED,
                "reward": float(ep.reward),
                "success": success,
                "success_source": source,
                "steps": ep.steps,
                "terminated": ep.terminated,
                "truncated": ep.truncated,
                "stop_condition": stop,
                "wall_ms": (time.monotonic() - t0) * 1000,
                "predict_ms": ep.predict_ms,
                "step_ms": ep.step_ms,
                "latency": {"predict": hooks.predict, "step": hooks.step},
                "finished_at": timezone.now(),
            }
        )

    def _run_session(self, index: int, seed: int, base: dict, *, wall_cap: float) -> EpisodeOutcome:
        """The episode as an explicit ``rlmesh.session`` loop, for what ``rlmesh.run`` cannot do: driver-side
        perturbations between the model and the env, and rendering frames for a video. Same caps, stop
        conditions and success rules as the plain path."""
        import rlmesh

        render = recording.renders(self.workload.record, index)
        predict_h: dict[str, int] = {}
        step_h: dict[str, int] = {}
        predict_ms: list[float] = []
        step_ms: list[float] = []
        frames: list = []
        render_ms = 0.0
        t0 = time.monotonic()
        env_client = None
        steps, total, terminated, truncated, info = 0, 0.0, False, False, {}
        try:
            env_client = rlmesh.numpy.RemoteEnv(self.env.address, connect_timeout_seconds=10, request_timeout_seconds=self.request_timeout)
            space = env_client.action_space
            if self.random_model:
                space.seed(seed)
                model = rlmesh.numpy.Model(lambda obs: space.sample())
            else:
                model = rlmesh.numpy.RemoteModel(self.model.address, connect_timeout_seconds=10, request_timeout_seconds=self.request_timeout)
            perturber = Perturber(self.perturbation, seed, space)
            with rlmesh.session(model, env_client) as session:
                obs, info = session.reset(seed=seed)

                def grab(observation):
                    nonlocal render_ms
                    r0 = time.perf_counter()
                    try:
                        rendered = env_client.render()
                    except Exception:  # noqa: BLE001 - an env that cannot render falls back to image observations
                        rendered = None
                    render_ms += (time.perf_counter() - r0) * 1000
                    frame = recording.frame_from(rendered, observation)
                    if frame is not None:
                        frames.append(frame)

                if render:
                    grab(obs)
                action = None
                while True:
                    if perturber.wants_prediction():
                        p0 = time.perf_counter()
                        action = session.predict(perturber.observation(obs))
                        predict_ms.append((time.perf_counter() - p0) * 1000)
                        histogram_add(predict_h, predict_ms[-1])
                    s0 = time.perf_counter()
                    obs, reward, terminated, truncated, info = session.step(perturber.action(action))
                    step_ms.append((time.perf_counter() - s0) * 1000)
                    histogram_add(step_h, step_ms[-1])
                    steps += 1
                    total += float(reward)
                    if render:
                        grab(obs)
                    if terminated or truncated:
                        break
                    if (self.workload.max_steps and steps >= self.workload.max_steps) or steps >= RLMESH_STEP_BOUND \
                            or time.monotonic() - t0 >= wall_cap:
                        truncated = True
                        break
        except Exception as exc:  # noqa: BLE001 - as in run_episode: this episode fails, not the shard
            return self._failed(base, exc, t0)
        finally:
            _close_quietly(env_client)
        wall_s = time.monotonic() - t0
        stop = _stop_condition(terminated=terminated, truncated=truncated, steps=steps,
                               max_steps=self.workload.max_steps, wall_s=wall_s, wall_cap=wall_cap)
        flag = info.get("success", info.get("is_success")) if isinstance(info, dict) else None
        success, source = episode_success(
            env_flag=None if flag is None else bool(flag), criterion=self.workload.success_criterion,
            terminated=terminated, reward=total, stop_condition=stop, steps=steps,
        )
        fields = {
            **base,
            "status": EpisodeStatus.COMPLETED, "reward": total, "success": success, "success_source": source,
            "steps": steps, "terminated": terminated, "truncated": truncated, "stop_condition": stop,
            "wall_ms": wall_s * 1000,
            "predict_ms": sum(predict_ms) / len(predict_ms) if predict_ms else None,
            "step_ms": sum(step_ms) / len(step_ms) if step_ms else None,
            "latency": {"predict": predict_h, "step": step_h},
            "finished_at": timezone.now(),
        }
        if render and recording.keeps(self.workload.record, success):
            fields.update(self._video(index, frames, render_ms))
        return EpisodeOutcome(fields)

    def _video(self, index: int, frames: list, render_ms: float) -> dict:
        if not frames:
            return {"video_meta": {"error": "the env rendered no frames and its observation holds no image"}}
        try:
            data, meta = recording.encode_mp4(frames)
            name = recording.store_video(
                f"episodes/{self.evaluation.public_id}/w{self.workload.index:03d}-e{index:05d}.mp4", data)
        except Exception as exc:  # noqa: BLE001 - a failed encode loses the video, never the episode
            logger.exception("encoding the video of episode %s failed", index)
            return {"video_meta": {"error": f"encoding failed: {type(exc).__name__}: {exc}"}}
        return {"video": name, "video_meta": {**meta, "renderMs": round(render_ms, 1)}}

    def _failed(self, base: dict, exc: Exception, t0: float) -> EpisodeOutcome:
        """The error outcome of an episode the env or model broke (timeout, crash, exception); servers restart."""
        wall_ms = (time.monotonic() - t0) * 1000
        kind = "timed out" if isinstance(exc, TimeoutError) else "failed"
        message = f"episode {kind}: {type(exc).__name__}: {exc}" + (" (a server crashed)" if self._crashed() else "")
        return EpisodeOutcome(self._error_fields(base, message, wall_ms=wall_ms), restart=True)

    def _crashed(self, grace: float = 1.0) -> bool:
        """Whether a server died; a dying process may still look alive for a moment after its connection broke,
        so this polls for up to ``grace`` seconds."""
        deadline = time.monotonic() + grace
        while True:
            if not (self.env and self.env.alive()) or not (self.random_model or (self.model and self.model.alive())):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def _error_fields(self, base: dict, message: str, *, wall_ms: float | None = None) -> dict:
        return {
            **base,
            "status": EpisodeStatus.ERROR,
            "stop_condition": StopCondition.ERROR,
            "error": message[:4000],
            "wall_ms": wall_ms,
            "finished_at": timezone.now(),
        }


class _Heartbeat(threading.Thread):
    """Keeps the shard's heartbeat fresh during long episodes so the reaper does not take it."""

    def __init__(self, shard: Shard):
        super().__init__(daemon=True)
        self.shard = shard
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(HEARTBEAT_SECONDS):
                heartbeat(self.shard)
        finally:
            connection.close()


def run_shard(shard_id: int) -> str | None:
    """Run the shard if it is still queued; return its final status, or None if it was not claimed."""
    shard = claim_shard(shard_id)
    if shard is None:
        return None
    evaluation = shard.evaluation
    if evaluation.status in (EvaluationStatus.CANCELLING, EvaluationStatus.CANCELLED):
        _end_shard(shard, ShardStatus.CANCELLED)
        finalize_evaluation(evaluation.pk)
        return ShardStatus.CANCELLED

    done = set(
        Episode.objects.filter(workload_id=shard.workload_id, index__gte=shard.start, index__lt=shard.stop).values_list("index", flat=True)
    )
    todo = [i for i in range(shard.start, shard.stop) if i not in done]
    attempt = f" (attempt {shard.attempts}, {len(done)} episodes already recorded)" if shard.attempts > 1 else ""
    log(evaluation, f"shard {shard.index} of {shard.workload.model_ref} × {shard.workload.task_id}: episodes [{shard.start}, {shard.stop}) started{attempt}", shard=shard)

    runner = ShardRunner(shard)
    beat = _Heartbeat(shard)
    beat.start()
    status, error = ShardStatus.COMPLETED, ""
    try:
        for index in todo:
            current = Evaluation.objects.filter(pk=evaluation.pk).values_list("status", flat=True).first()
            if current in (EvaluationStatus.CANCELLING, EvaluationStatus.CANCELLED):
                status = ShardStatus.CANCELLED
                break
            wall_cap = runner.episode_timeout
            deadline = evaluation.deadline
            if deadline is not None:
                remaining = (deadline - timezone.now()).total_seconds()
                if remaining <= 0:
                    status, error = ShardStatus.FAILED, "evaluation timed out"
                    break
                wall_cap = min(wall_cap, remaining)
            if runner.start_failures >= MAX_START_FAILURES:
                record_episode(shard=shard, index=index, **runner._error_fields(
                    {"seed": shard.workload.seed_for(index)}, f"not run: servers failed to start: {runner.last_start_error}"))
                continue
            outcome = runner.run_episode(index, wall_cap=wall_cap)
            if not record_episode(shard=shard, index=index, **outcome.fields) and outcome.fields.get("video"):
                default_storage.delete(outcome.fields["video"])  # recorded by an earlier delivery: drop the copy
            if outcome.restart:
                if outcome.fields.get("error"):
                    log(evaluation, f"episode {index} (seed {outcome.fields['seed']}): {outcome.fields['error']}", level=LogLevel.ERROR, shard=shard)
                runner.restart()
    except Exception as exc:  # noqa: BLE001 - a bug here must still end the shard and free its servers
        logger.exception("shard %s crashed", shard.pk)
        status, error = ShardStatus.FAILED, f"{type(exc).__name__}: {exc}"
        log(evaluation, f"shard {shard.index} crashed: {error}", level=LogLevel.ERROR, shard=shard)
    finally:
        beat.stopped.set()
        runner.close()
    _end_shard(shard, status, error)
    finalize_evaluation(evaluation.pk)
    return status


def _end_shard(shard: Shard, status: str, error: str = "") -> None:
    Shard.objects.filter(pk=shard.pk, status=ShardStatus.RUNNING, claimed_by=shard.claimed_by).update(
        status=status, finished_at=timezone.now(), error=error
    )
