"""An episode as an explicit ``rlmesh.session`` loop, for what ``rlmesh.run`` cannot do: driver-side perturbations
between the model and the env, and rendering frames for a video. Same caps, stop conditions and success rules as the
plain path (:mod:`evaluations.runs.runner`)."""

from __future__ import annotations

import json
import time

from django.conf import settings

from ..domain.outcomes import STEP_BOUND, env_success_flag
from ..domain.perturbations import Perturber
from ..domain.scoring import histogram_add
from ..domain.trajectory import TrajectoryDigest
from . import recording
from .steps import StepRecorder
from .outcome import EpisodeOutcome, close_quietly, completed_fields

__all__ = ["run_session_episode"]


class _Frames:
    """What one episode renders for its record: video frames (the env's ``render()``, else an image in the
    observation) and, for recorded steps, the images an env renders beside the observation (``render()`` a stack
    ``(n, H, W, 3)`` whose paths ``metadata["record_keys"]`` names; LIBERO's ``record_cameras``). One render per step
    serves both; time spent in ms. ``budget`` (shared with the recorded steps) bounds the frames held."""

    def __init__(self, env_client, enabled: bool, budget: recording.RecordBudget | None = None,
                 record_keys: tuple[str, ...] = ()):
        self.env_client = env_client
        self.enabled = enabled
        self.budget = budget
        self.record_keys = tuple(record_keys)
        self.frames: list = []
        self.render_ms = 0.0
        self.fps = _fps(env_client) if enabled else recording.FPS

    def grab(self, observation, step: int = 0) -> dict:
        """Render for ``step`` (0: the reset) unless the recording's budget has stopped: keep its video frame, and
        return the record-only images by observation path (``{"pixels.image": …}``; {} when there are none)."""
        if not (self.enabled or self.record_keys) or (self.budget is not None and self.budget.stopped is not None):
            return {}
        r0 = time.perf_counter()
        try:
            rendered = self.env_client.render()
        except Exception:  # noqa: BLE001 - an env that cannot render falls back to image observations
            rendered = None
        self.render_ms += (time.perf_counter() - r0) * 1000
        images = recording.record_images(rendered, self.record_keys)
        if self.enabled:  # the first image rendered for the record is the video's
            frame = recording.frame_from(next(iter(images.values())) if images else rendered, observation)
            if frame is not None and (self.budget is None or self.budget.take(frame.nbytes, step)):
                self.frames.append(frame)
        return images


def _record_keys(env_client) -> tuple[str, ...]:
    """The observation paths of the images the env renders for the record (``metadata["record_keys"]``), or ()."""
    try:
        keys = env_client.metadata.get("record_keys") or ()
    except Exception:  # noqa: BLE001 - an env whose metadata cannot be read renders nothing for the record
        return ()
    return tuple(str(k) for k in keys) if isinstance(keys, (list, tuple)) else ()


def _fps(env_client) -> int:
    """The env's control rate for recorded steps (``recording.playback_fps``; the default when unreadable)."""
    try:
        return recording.playback_fps(env_client.metadata)
    except Exception:  # noqa: BLE001 - an env whose metadata cannot be read gets the default rate
        return recording.FPS


class _Timings:
    """Per-step predict and env-step latencies (ms): lists for the means, log-bucketed histograms for percentiles."""

    def __init__(self):
        self.predict: list[float] = []
        self.step: list[float] = []
        self.predict_h: dict[str, int] = {}
        self.step_h: dict[str, int] = {}

    def add(self, kind: str, ms: float) -> None:
        getattr(self, kind).append(ms)
        histogram_add(getattr(self, f"{kind}_h"), ms)

    def fields(self) -> dict:
        mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
        return {"predict_ms": mean(self.predict), "step_ms": mean(self.step),
                "latency": {"predict": self.predict_h, "step": self.step_h}}


def with_time_left(obs, deadline: float):
    """An agent observation with ``timeLeftSeconds`` (seconds to the monotonic ``deadline``) added to its ``meta``
    JSON, which the endpoint bridge bounds its call by; anything else unchanged."""
    if not isinstance(obs, dict) or not isinstance(obs.get("meta"), str):
        return obs
    try:
        meta = json.loads(obs["meta"])
    except json.JSONDecodeError:
        return obs
    if not isinstance(meta, dict):
        return obs
    return {**obs, "meta": json.dumps({**meta, "timeLeftSeconds": round(deadline - time.monotonic(), 3)})}


def _loop(session, perturber: Perturber, frames: _Frames, timings: _Timings, digest: TrajectoryDigest, *, seed: int,
          max_steps: int | None, deadline: float, hook=None,
          steps_kept: StepRecorder | None = None) -> tuple[int, float, bool, bool, dict]:
    """Step until the env ends the episode or a cap (``max_steps``, rlmesh's step bound, the monotonic ``deadline``)
    truncates it; return ``(steps, return, terminated, truncated, last info)``. ``digest`` gets each step as
    ``rlmesh.run``'s hooks report it (the env's observation before the step, the action the env received, the
    step's reward and flags, ``truncated`` set at the step cap), so both loops digest an episode alike.
    ``hook`` (an agent rollout's :class:`~evaluations.runs.transcripts.TranscriptRecorder`) sees the reset and every
    step; ``steps_kept`` records the env's observations and the actions it received (``runs.steps``).

    The deadline holds during a model call too: an agent's call is told the time left (:func:`with_time_left`;
    the bridge ends it then, its connection closed), and an action that comes back after the deadline is never
    executed (nor digested): the episode ends truncated there (``hook.on_deadline`` records the call)."""
    steps_kept = steps_kept or StepRecorder(False)
    obs, info = session.reset(seed=seed)
    steps_kept.reset(obs, frames.grab(obs))
    if hook is not None:
        hook.on_reset(obs, info, seed=seed)
    action = None
    steps, total, terminated, truncated = 0, 0.0, False, False
    predict_ms = 0.0
    while True:
        if perturber.wants_prediction():
            p0 = time.perf_counter()
            model_obs = perturber.observation(obs)
            action = session.predict(with_time_left(model_obs, deadline) if hook is not None else model_obs)
            predict_ms = (time.perf_counter() - p0) * 1000
            timings.add("predict", predict_ms)
            if time.monotonic() >= deadline:
                if hook is not None:
                    hook.on_deadline(steps + 1, action, predict_ms=predict_ms)
                return steps, total, terminated, True, info
        sent = perturber.action(action)
        s0 = time.perf_counter()
        prev_obs = obs
        obs, reward, terminated, truncated, info = session.step(sent)
        step_ms = (time.perf_counter() - s0) * 1000
        timings.add("step", step_ms)
        steps += 1
        total += float(reward)
        capped = steps >= (max_steps or STEP_BOUND) and not (terminated or truncated)  # rlmesh's step cap
        digest.step(prev_obs, sent, reward, terminated, truncated or capped)
        steps_kept.step(sent, obs, reward, terminated, truncated, info, frames.grab(obs, steps))
        if hook is not None:
            hook.on_step(steps, action, obs, reward, terminated, truncated, info, predict_ms=predict_ms,
                         step_ms=step_ms)
        if terminated or truncated:
            return steps, total, terminated, truncated, info
        if (max_steps and steps >= max_steps) or steps >= STEP_BOUND or time.monotonic() >= deadline:
            steps_kept.truncate()
            return steps, total, terminated, True, info


def _store_recording(runner, index: int, success: bool | None, frames: _Frames | None, steps_kept: StepRecorder) -> dict:
    """Store what the episode recorded (its video, its steps) as its task keeps them; the Episode fields. Both are
    counted against one figure of the quota left, so together they never pass it."""
    workload, public_id = runner.workload, runner.evaluation.public_id
    fields: dict = {}
    wants_video = frames is not None and recording.keeps(workload.record, success)
    wants_steps = recording.renders(workload.record_steps, index) and recording.keeps(workload.record_steps, success)
    if not (wants_video or wants_steps):
        return fields
    left = runner.evaluation.organization.storage_left()
    if wants_video:
        name = f"episodes/{public_id}/w{workload.index:03d}-e{index:05d}.mp4"
        fields.update(recording.save_episode_video(name, frames.frames, frames.render_ms, storage_left=left,
                                                   fps=frames.fps, stopped=frames.budget.stopped if frames.budget else None))
        left -= int(fields["video_meta"].get("bytes") or 0) if fields.get("video") else 0
    if wants_steps:
        name = f"steps/{public_id}/w{workload.index:03d}-e{index:05d}.npz"
        fields.update(steps_kept.save(name, storage_left=left))
    return fields


def run_session_episode(runner, index: int, seed: int, base: dict, *, wall_cap: float, hook=None) -> EpisodeOutcome:
    """Run episode ``index`` with seed ``seed`` of a :class:`~evaluations.runs.runner.ShardRunner`'s workload as a
    session loop; return its outcome (an ``error`` outcome with ``restart`` set when the env or model failed).
    ``hook`` records an agent rollout's transcript and adds its fields (``hook.finish``)."""
    import rlmesh

    workload = runner.workload
    render = recording.renders(workload.record, index)
    keep_steps = recording.renders(workload.record_steps, index)
    # One budget for the episode's frames and steps, and the quota left as it begins (nothing is rendered for the
    # record when none is left).
    left = runner.evaluation.organization.storage_left() if render or keep_steps else None
    budget = recording.RecordBudget(settings.RLMESH_RECORD_MAX_BYTES, storage_left=left)
    steps_kept = StepRecorder(keep_steps, budget)
    timings = _Timings()
    digest = TrajectoryDigest()
    t0 = time.monotonic()
    env_client = None
    try:
        env_client, model = runner.clients(seed, numpy_env=True)
        frames = _Frames(env_client, render, budget, _record_keys(env_client) if steps_kept.enabled else ())
        steps_kept.fps = _fps(env_client) if steps_kept.enabled else None
        perturber = Perturber(runner.perturbation, seed, env_client.action_space)
        with rlmesh.session(model, env_client) as session:
            steps, total, terminated, truncated, info = _loop(
                session, perturber, frames, timings, digest, seed=seed, max_steps=workload.max_steps,
                deadline=t0 + wall_cap, hook=hook, steps_kept=steps_kept)
    except Exception as exc:  # noqa: BLE001 - as on the plain path: this episode fails, not the shard
        outcome = runner.failed(base, exc, t0)
        if hook is not None:
            hook.on_error(exc)
            outcome.fields = hook.finish(outcome.fields)
        return outcome
    finally:
        close_quietly(env_client)
    fields = completed_fields(
        base, reward=total, steps=steps, terminated=terminated, truncated=truncated, flag=env_success_flag(info),
        workload=workload, wall_s=time.monotonic() - t0, wall_cap=wall_cap, digest=digest.hexdigest(),
        **timings.fields(),
    )
    fields.update(_store_recording(runner, index, fields["success"], frames if render else None, steps_kept))
    if hook is not None:
        fields = hook.finish(fields)
    return EpisodeOutcome(fields)
