"""One shard's servers and episodes: :class:`ShardRunner` starts (and restarts) its env and model servers through the
runtime and runs one episode at a time, returning each outcome as the Episode fields to record.

An episode runs on ``rlmesh.run`` (the three-process path the platform's overhead is measured against) unless it
needs what only an explicit session loop can do — driver-side perturbations, rendering frames for a video or keeping
its steps for a dataset (``recordSteps``) — and
then on :func:`evaluations.runs.session.run_session_episode`. Both share the outcome rules of
:mod:`evaluations.domain.outcomes`.
"""

from __future__ import annotations

import hashlib
import json
import re
import time

from django.conf import settings
from django.utils import timezone

from ..choices import LogLevel
from ..domain import perturbations
from ..domain.scoring import histogram_add
from ..domain.trajectory import TrajectoryDigest
from ..models import Evaluation, Shard, Workload
from ..planning.rendering import host_memory_bytes, memory_fraction
from ..prebuilt.catalog import declared_memory, model_memory, ready_timeout
from ..runtime import RuntimeBackendError, ServedEndpoint, ServerSpec, backend_for, inference, shared
from ..runtime.memory import HostMemoryLedger, Reservation, default_ledger_path
from ..runtime.local import LocalRuntime
from ..prebuilt.lerobot.entry import LEROBOT_SOURCE
from ..services import model_cars
from . import recording
from .lifecycle import log
from .outcome import EpisodeOutcome, close_quietly, completed_fields, error_fields
from .session import run_session_episode
from .transcripts import KEY_ENV, TranscriptRecorder, is_agent_workload, model_secrets

__all__ = ["ShardRunner"]


class _LatencyHooks:
    """Collects per-step predict/step latencies into log-bucketed histograms (see domain.scoring) and the episode's
    trajectory digest (domain.trajectory: each step's pre-step observation, action, reward and end flags)."""

    def __init__(self):
        import rlmesh

        class Hooks(rlmesh.RunHooks):
            def __init__(inner):
                super().__init__()
                inner.predict: dict[str, int] = {}
                inner.step: dict[str, int] = {}
                inner.digest = TrajectoryDigest()

            def on_step(inner, event):
                histogram_add(inner.predict, event.predict_ms)
                histogram_add(inner.step, event.step_ms)
                inner.digest.step(event.observation, event.action, event.reward, event.terminated, event.truncated)

        self.hooks = Hooks()


#: How rlmesh 0.1.0 words a call past its ``request_timeout_seconds`` ("remote environment call timed out after 2.000s",
#: "remote model request timed out after 30.000s").
CALL_TIMED_OUT = re.compile(r"remote (environment|model) (call|request) timed out after")


class ShardRunner:
    """Owns the env and model servers of one shard and runs its episodes one at a time."""

    def __init__(self, shard: Shard):
        self.shard = shard
        self.workload: Workload = shard.workload
        self.evaluation: Evaluation = shard.evaluation
        cfg = self.evaluation.config
        self.request_timeout = float(cfg.get("requestTimeoutSeconds", 30.0))
        self.episode_timeout = float(cfg.get("episodeTimeoutSeconds", 600.0))
        self.servers: dict[str, ServedEndpoint | None] = {"env": None, "model": None}
        self.random_model = self.workload.model_version.source == "builtin:random"
        self.perturbation = perturbations.parse(self.workload.perturbation)
        self.start_failures = 0
        self.last_start_error = ""
        #: Agent rollouts always take the session loop, with a transcript (runs.transcripts).
        self.agent = is_agent_workload(self.workload)
        self._secrets: dict | None = None
        #: The host memory held for the env server (``runtime.memory``), from ``admit`` until ``close``.
        self.memory: Reservation | None = None

    def secrets(self) -> dict:
        """The model server's secrets (the bridge's endpoint key), decrypted once; RuntimeBackendError when the
        stored key cannot be read."""
        if self._secrets is None:
            self._secrets = model_secrets(self.evaluation, self.workload)
        return self._secrets

    @property
    def env(self) -> ServedEndpoint | None:
        return self.servers["env"]

    @property
    def model(self) -> ServedEndpoint | None:
        return self.servers["model"]

    # ----------------------------------------------------------- servers
    def _spec(self, kind: str) -> ServerSpec:
        w = self.workload
        if kind == "env":
            return ServerSpec("env", w.env_version.source, dict(w.env_kwargs), ready_timeout=ready_timeout(w.env_version))
        if w.model_version.lerobot:  # a model car: its checkpoint, read out of the image, in the LeRobot server
            return model_cars.server_spec(w.model_version, dict(w.model_kwargs))
        return ServerSpec("model", w.model_version.source, dict(w.model_kwargs), dict(w.env_vars),
                          secrets=self.secrets())

    def _missing(self, kind: str) -> bool:
        """Whether the ``kind`` server must be (re)started; a dead one is logged with its last output and stopped."""
        server = self.servers[kind]
        if server is not None and server.alive():
            return False
        if server is not None:
            log(self.evaluation, f"{kind} server died; restarting. Last output:\n{server.stop_with_output()}",
                level=LogLevel.WARNING, source="runtime", shard=self.shard)
        self.servers[kind] = None
        return True

    def _start(self, kind: str) -> ServedEndpoint:
        spec = self._spec(kind)
        backend = backend_for(spec.source)

        def start() -> ServedEndpoint:
            server = backend.start(spec, name=self.shard.server_name(kind))
            if kind == "model":
                self._count_model_memory(spec, server)
            return server

        local = kind == "model" and isinstance(backend, LocalRuntime)
        if local and settings.RLMESH_SHARE_MODEL_SERVERS:
            # The shards of an evaluation on this host that run one model the same way share its weights
            # (runtime.shared): one rlmesh model server, or, for a batching model, one inference process that each
            # shard's thin server asks (runtime.inference), so their episodes meet in its batcher.
            key = self._model_key(spec)
            if inference.batches(spec):
                return inference.start(key, spec, backend, self.shard.server_name(kind),
                                       lambda hub: self._count_model_memory(spec, hub))
            return shared.acquire(key, start)
        if kind == "model" and spec.source.startswith("oci://") and inference.batches(spec) \
                and not settings.RLMESH_DOCKER_HOST.startswith("unix://"):
            # Its processes share a host folder, which a remote engine's containers cannot see: served as it is.
            log(self.evaluation, f"{self.workload.model_ref} is served one call at a time: batching an image across "
                f"episodes needs a local engine (DOCKER_HOST is {settings.RLMESH_DOCKER_HOST})",
                level=LogLevel.WARNING, source="runtime", shard=self.shard)
            spec = inference.unbatched(spec)
            return backend.start(spec, name=self.shard.server_name(kind))
        if kind == "model" and spec.source.startswith("oci://") and inference.batches(spec):
            # A pushed image with a batched corner: its inference process in a container of the image, shared by the
            # evaluation's shards on this host (each its own when servers are not shared), a thin server per shard.
            key = self._model_key(spec) + ("" if settings.RLMESH_SHARE_MODEL_SERVERS else f"-shard{self.shard.pk}")
            return inference.start(key, spec, backend, self.shard.server_name(kind),
                                   lambda hub: self._count_model_memory(spec, hub),
                                   label=f"{self.evaluation.public_id}-inference")
        if local and inference.batches(spec) and spec.source != LEROBOT_SOURCE:
            # Not shared, but still served at the batch shape recorded on the workload: an inference process of the
            # shard's own (an rlmesh model's load() never sees the batch keys; prebuilt.fused).
            key = f"{self._model_key(spec)}-shard{self.shard.pk}"
            return inference.start(key, spec, backend, self.shard.server_name(kind),
                                   lambda hub: self._count_model_memory(spec, hub))
        return start()

    def _model_key(self, spec: ServerSpec) -> str:
        """The registry key of the shared model server of ``spec`` (``shared.model_key``); an rlmesh model batched
        in an inference process (``prebuilt.fused``) has one per task too: rows of one pass are stacked, and another
        task's observations may have other shapes, keys or dtypes (stacking float32 with float64 would change a row's
        numbers by its neighbours)."""
        key = shared.model_key(self.evaluation.pk, spec)
        if not inference.batches(spec) or spec.source == LEROBOT_SOURCE:
            return key  # LeRobot's processors give every task the policy's own input shapes
        w = self.workload
        task = json.dumps([w.env_version_id, w.task_id, w.env_kwargs], sort_keys=True, default=str)
        return f"{key}-{hashlib.sha256(task.encode()).hexdigest()[:8]}"

    def _count_model_memory(self, spec: ServerSpec, server: ServedEndpoint) -> None:
        """Count a local model server's memory in the host ledger once, for as long as its process runs (a shared
        one is started, and so counted, once): the envs admitted after it see it (``runtime.memory``)."""
        pid = getattr(getattr(server, "proc", None), "pid", None)
        nbytes = model_memory(spec, self.workload.model_version)
        if pid is None or not nbytes:
            return
        ledger = HostMemoryLedger(default_ledger_path(), memory_fraction() * host_memory_bytes())
        try:
            ledger.record(nbytes, f"model {self.workload.model_ref}", pid)
        except OSError as exc:
            log(self.evaluation, f"host memory ledger {ledger.path} unusable ({exc}); the model server is not "
                "counted in it", level=LogLevel.WARNING, source="runtime", shard=self.shard)

    def admit(self, stop) -> bool:
        """Wait until this host has room for the env server's declared memory (``runtime.memory``) and hold it until
        ``close``; True at once for an env that declares none or whose room is held already, False if ``stop()``
        turned true while waiting. A ledger this process cannot use (another user's file) admits, with a warning."""
        nbytes = declared_memory(self.workload.env_version) if self.workload.env_version_id else 0
        if not nbytes or self.memory is not None:
            return True
        what = f"{self.workload.env_ref} ({self.workload.task_id})"
        ledger = HostMemoryLedger(default_ledger_path(), memory_fraction() * host_memory_bytes())

        waited: list[float] = []

        def waiting(held: dict) -> None:
            waited.append(time.monotonic())
            gb = sum(e["bytes"] for e in held.values()) / 2**30
            log(self.evaluation, f"waiting for memory on this host: {what} declares {nbytes / 2**30:.1f} GB and "
                f"{len(held)} env servers hold {gb:.1f} GB of the {ledger.budget_bytes / 2**30:.1f} GB envs may take "
                f"(RLMESH_ENV_MEMORY_FRACTION); it starts when one ends", source="runtime", shard=self.shard)

        t0 = time.monotonic()
        try:
            self.memory = ledger.reserve(nbytes, what, stop=stop, on_wait=waiting)
        except OSError as exc:
            log(self.evaluation, f"host memory ledger {ledger.path} unusable ({exc}); {what} starts without a "
                "reservation", level=LogLevel.WARNING, source="runtime", shard=self.shard)
            return True
        if self.memory is not None and waited:
            timings = {**self.shard.timings, "memoryWaitSeconds": [*self.shard.timings.get("memoryWaitSeconds", []),
                                                                   round(time.monotonic() - t0, 2)]}
            self.shard.timings = timings
            Shard.objects.filter(pk=self.shard.pk).update(timings=timings)
        return self.memory is not None

    def ensure_servers(self) -> None:
        """Start (or restart) whatever server is not running. Raises RuntimeBackendError on failure (a server that did
        start is kept, and stopped by ``close``).

        Servers are started from this thread, never from a short-lived one: ``PR_SET_PDEATHSIG`` ties a child to the
        thread that created it, so a server started by a pool thread would be killed when that thread ends."""
        timings = dict(self.shard.timings)
        try:
            for kind in ("env",) if self.random_model else ("env", "model"):
                if not self._missing(kind):
                    continue
                server = self.servers[kind] = self._start(kind)
                timings.setdefault(f"{kind}StartSeconds", []).append(round(server.ready_seconds, 3))
                what = f"{self.workload.env_ref} ({self.workload.task_id})" if kind == "env" else self.workload.model_ref
                log(self.evaluation, f"{kind} server {what} ready in {server.ready_seconds:.2f} s at {server.address}",
                    source="runtime", shard=self.shard)
        finally:
            if timings != self.shard.timings:
                self.shard.timings = timings
                Shard.objects.filter(pk=self.shard.pk).update(timings=timings)

    def close(self) -> None:
        """Stop both servers (a container's last output is kept in the Logs first: it is gone once removed); the
        batch sizes the model server has seen so far are kept on the shard (``timings["modelBatches"]``)."""
        self._keep_batch_stats()
        for kind, server in self.servers.items():
            if server is None:
                continue
            if server.output_lost_on_stop:  # stopped first, so its last words (a shutdown traceback) are in
                tail = server.stop_with_output(20).strip()
                if tail:
                    log(self.evaluation, f"{kind} container output (last lines):\n{tail}", source="container", shard=self.shard)
            else:
                server.stop()
        self.servers = {"env": None, "model": None}
        if self.memory is not None:
            self.memory.release()
            self.memory = None

    def _keep_batch_stats(self) -> None:
        stats = self.servers["model"].batch_stats() if self.servers["model"] is not None else None
        if stats is None:
            return
        kept = [s for s in self.shard.timings.get("modelBatches", []) if s.get("server") != stats["server"]]
        self.shard.timings = {**self.shard.timings, "modelBatches": [*kept, stats]}
        Shard.objects.filter(pk=self.shard.pk).update(timings=self.shard.timings)

    # ----------------------------------------------------------- episodes
    def not_run(self, index: int) -> dict:
        """The error fields of an episode skipped because the servers kept failing to start."""
        return error_fields({"seed": self.workload.seed_for(index)},
                            f"not run: servers failed to start: {self.last_start_error}")

    def run_episode(self, index: int, *, wall_cap: float, stop=None) -> EpisodeOutcome | None:
        """Run episode ``index`` (seed ``workload.seed + index``) within ``wall_cap`` seconds and return its outcome;
        never raises for an env/model failure — that becomes an ``error`` outcome with ``restart`` set. ``stop`` (a
        no-argument callable) is asked once the servers are ready, before the episode starts: starting them can take
        a minute, and a cancellation that arrived meanwhile must not start an episode (None is returned then)."""
        seed = self.workload.seed_for(index)
        base = {"seed": seed, "started_at": timezone.now()}
        try:
            self.ensure_servers()
            self.start_failures = 0
        except RuntimeBackendError as exc:
            self.start_failures += 1
            self.last_start_error = f"{exc}" + (f"\n{exc.log_tail}" if exc.log_tail else "")
            log(self.evaluation, f"server start failed: {self.last_start_error}", level=LogLevel.ERROR,
                source="runtime", shard=self.shard)
            self.close()
            return EpisodeOutcome(error_fields(base, f"server start failed: {exc}"), restart=True)
        if stop is not None and stop():
            return None
        base["started_at"] = timezone.now()  # the episode starts once its servers are ready
        base["perturbation"] = self.perturbation.as_dict() if self.perturbation.name != "none" else {}
        driver_side = self.perturbation.side == "driver" and self.perturbation.name != "none"
        if self.agent:
            key = self.secrets().get(KEY_ENV, "")
            hook = TranscriptRecorder(evaluation=self.evaluation, workload=self.workload, index=index, key=key)
            return run_session_episode(self, index, seed, base, wall_cap=wall_cap, hook=hook)
        if driver_side or recording.renders(self.workload.record, index) or recording.renders(self.workload.record_steps, index):
            return run_session_episode(self, index, seed, base, wall_cap=wall_cap)
        return self._run_plain(seed, base, wall_cap=wall_cap)

    def clients(self, seed: int, *, numpy_env: bool):
        """``(env client, model)`` for one episode: the random baseline samples the env's action space seeded by the
        episode seed; anything else is the shard's model server."""
        import rlmesh

        kw = {"connect_timeout_seconds": 10, "request_timeout_seconds": self.request_timeout}
        env_client = (rlmesh.numpy.RemoteEnv if numpy_env or self.random_model else rlmesh.RemoteEnv)(self.env.address, **kw)
        if self.random_model:
            space = env_client.action_space
            space.seed(seed)
            # NO_ADAPTER: the baseline acts on any env, tagged or not (rlmesh refuses spec=None on a tagged one).
            return env_client, rlmesh.numpy.Model(lambda obs: space.sample(), spec=rlmesh.NO_ADAPTER)
        remote = rlmesh.numpy.RemoteModel if numpy_env else rlmesh.RemoteModel
        return env_client, remote(self.model.address, **kw)

    def _run_plain(self, seed: int, base: dict, *, wall_cap: float) -> EpisodeOutcome:
        import rlmesh

        hooks = _LatencyHooks().hooks
        t0 = time.monotonic()
        env_client = None
        try:
            env_client, model = self.clients(seed, numpy_env=False)
            result = rlmesh.run(model, env_client, seeds=[seed], max_episode_steps=self.workload.max_steps,
                                max_episode_seconds=wall_cap, hooks=hooks)
        except Exception as exc:  # noqa: BLE001 - any env/model failure ends this episode, not the shard
            return self.failed(base, exc, t0)
        finally:
            close_quietly(env_client)
        ep = result.episodes[0]
        return EpisodeOutcome(completed_fields(
            base, reward=ep.reward, steps=ep.steps, terminated=ep.terminated, truncated=ep.truncated, flag=ep.success,
            workload=self.workload, wall_s=time.monotonic() - t0, wall_cap=wall_cap, episode_s=ep.duration_s,
            predict_ms=ep.predict_ms, step_ms=ep.step_ms, latency={"predict": hooks.predict, "step": hooks.step},
            digest=hooks.digest.hexdigest(),
        ))

    def described(self, exc: BaseException) -> str:
        """``"Type: message"`` of an env or model failure; for a call that outlasted its deadline, also which deadline
        and who sets it (a call slower than that, e.g. a large model batched on a CPU, is not the episode's fault)."""
        text = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, TimeoutError) and CALL_TIMED_OUT.search(str(exc)):
            text += (f"; each env or model call has {self.request_timeout:g} s (the evaluation's requestTimeoutSeconds, "
                     "which an operator sets as RLMESH_REQUEST_TIMEOUT)")
        return text

    def failed(self, base: dict, exc: Exception, t0: float) -> EpisodeOutcome:
        """The error outcome of an episode the env or model broke (timeout, crash, exception); servers restart."""
        wall_ms = (time.monotonic() - t0) * 1000
        kind = "timed out" if isinstance(exc, TimeoutError) else "failed"
        crashed = self._crashed()
        message = f"episode {kind}: {self.described(exc)}" + (" (a server crashed)" if crashed else "")
        rerun = ""
        if crashed and self.model is not None and self.model.orphaned():
            rerun = (f"the shared model server died with the process that started it (pid {self.model.owner}), "
                     f"not by the model's fault ({type(exc).__name__})")
        return EpisodeOutcome(error_fields(base, message, wall_ms=wall_ms), restart=True, rerun=rerun)

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
