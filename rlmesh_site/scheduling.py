"""Scheduling and recovery, read by the settings (``rlmesh_site.settings`` imports every name): how episodes are cut
into shards, how a dead worker or a lost message is noticed and its shards run again, and the rates previews
estimate with. Each is in the manual's settings page (docs/running/settings.md)."""

from __future__ import annotations

import socket

from rlmesh_site.env import env_float, env_int, env_str

#: A shard never holds more episodes than this, so it finishes well inside the broker's visibility timeout.
RLMESH_MAX_EPISODES_PER_SHARD = env_int("RLMESH_MAX_EPISODES_PER_SHARD", 100)
#: An evaluation whose errored episodes exceed this fraction ends `failed` instead of `completed`.
RLMESH_MAX_ERROR_FRACTION = env_float("RLMESH_MAX_ERROR_FRACTION", 0.1)
#: A running shard whose heartbeat is older than this is presumed dead and re-queued.
RLMESH_SHARD_HEARTBEAT_TIMEOUT = env_float("RLMESH_SHARD_HEARTBEAT_TIMEOUT", 300.0)
#: The host name recorded on the shards a worker claims (default: the machine's). Every host of a deployment must
#: have its own; the tests give each worker process one to stand for separate hosts.
RLMESH_HOSTNAME = env_str("RLMESH_HOSTNAME", "") or socket.gethostname()
#: Worker processes refresh their liveness record this often (seconds); one silent for the timeout is dead, on any host.
RLMESH_WORKER_HEARTBEAT_SECONDS = env_float("RLMESH_WORKER_HEARTBEAT_SECONDS", 5.0)
RLMESH_WORKER_LIVENESS_TIMEOUT = env_float("RLMESH_WORKER_LIVENESS_TIMEOUT", 20.0)
#: How often beat runs the reaper (seconds).
RLMESH_REAP_INTERVAL = env_float("RLMESH_REAP_INTERVAL", 10.0)
#: Queued shards are sent again when some worker has been idle this long while they wait (a lost message).
RLMESH_IDLE_RESEND_SECONDS = env_float("RLMESH_IDLE_RESEND_SECONDS", 5.0)
#: A running evaluation that records no episode for this long fails, with the reason in its log (the watchdog).
RLMESH_EVALUATION_STALL_SECONDS = env_float("RLMESH_EVALUATION_STALL_SECONDS", 1800.0)
#: For how long the shard loop retries a database that went away (a restart) before the shard fails.
RLMESH_DB_RETRY_SECONDS = env_float("RLMESH_DB_RETRY_SECONDS", 60.0)
#: One schedule, one place: the reaper (with the 20 s liveness timeout a killed worker's shards run again within ~30 s).
CELERY_BEAT_SCHEDULE = {"reap-orphaned-shards": {"task": "evaluations.reap_shards", "schedule": RLMESH_REAP_INTERVAL}}
#: How many times a shard is (re-)started before it is failed.
RLMESH_SHARD_MAX_ATTEMPTS = env_int("RLMESH_SHARD_MAX_ATTEMPTS", 3)
#: Env-steps per second one shard sustains, used only for preview estimates (measured: bench/).
RLMESH_ESTIMATED_STEPS_PER_SECOND = env_float("RLMESH_ESTIMATED_STEPS_PER_SECOND", 400.0)
#: Seconds to render one frame of a recorded episode, used only for preview estimates (Meta-World 128² on CPU
#: measured 75–300 ms; CartPole ~9 ms): an upper bound leans high.
RLMESH_ESTIMATED_RENDER_SECONDS = env_float("RLMESH_ESTIMATED_RENDER_SECONDS", 0.15)
#: Shards that run at once across the worker pool, used only for preview estimates.
RLMESH_ESTIMATED_PARALLEL_SHARDS = env_int("RLMESH_ESTIMATED_PARALLEL_SHARDS", 2)
