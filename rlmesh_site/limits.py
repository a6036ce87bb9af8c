"""Size limits, read by the settings (``rlmesh_site.settings`` imports every name): what one request, evaluation,
imported bundle, organization's storage, caller's downloads, episode's recording and dataset export may take. Each
is in the manual's settings page (docs/running/settings.md)."""

from __future__ import annotations

from rlmesh_site.env import env_float, env_int

#: Largest `episodes` of one task, and of one evaluation in total.
RLMESH_MAX_EPISODES_PER_TASK = env_int("RLMESH_MAX_EPISODES_PER_TASK", 10_000)
RLMESH_MAX_EPISODES_PER_EVALUATION = env_int("RLMESH_MAX_EPISODES_PER_EVALUATION", 100_000)
RLMESH_MAX_WORKERS_PER_TASK = env_int("RLMESH_MAX_WORKERS_PER_TASK", 32)
RLMESH_MAX_WORKLOADS_PER_EVALUATION = env_int("RLMESH_MAX_WORKLOADS_PER_EVALUATION", 1000)
RLMESH_PREVIEW_WORKLOADS_PER_MINUTE = env_int("RLMESH_PREVIEW_WORKLOADS_PER_MINUTE", 10_000)  # per key (api/throttles.py)
#: Imported result bundles (POST /v1/evaluations/imports): the upload, and the total uncompressed size of its
#: members, are at most this many bytes; a bundle has at most this many zip members (evaluations/services/imports.py).
RLMESH_IMPORT_MAX_BYTES = env_int("RLMESH_IMPORT_MAX_BYTES", 200 * 1024 * 1024)
RLMESH_IMPORT_MAX_MEMBERS = env_int("RLMESH_IMPORT_MAX_MEMBERS", 20_000)
#: A bundle uncompresses to at most this many times its upload size (at least 1 MiB; real ones stay far below).
RLMESH_IMPORT_MAX_EXPANSION = env_float("RLMESH_IMPORT_MAX_EXPANSION", 20.0)
#: Bytes of episode media (recorded and imported videos) one organization may keep in storage.
RLMESH_ORG_STORAGE_QUOTA_BYTES = env_int("RLMESH_ORG_STORAGE_QUOTA_BYTES", 20 * 1024**3)
#: Downloads (dataset zips, videos, run outputs) one caller (an API key, else a user, else an address) holds at once
#: on a web host; one more is a 429 until one ends (evaluations/media.py).
RLMESH_DOWNLOADS_PER_CALLER = env_int("RLMESH_DOWNLOADS_PER_CALLER", 4)
#: Bytes one episode's recording (its video frames and recorded steps, as the worker holds them before writing) may
#: take in the worker's memory; past it the recording stops, says so on the episode, and the episode still counts.
RLMESH_RECORD_MAX_BYTES = env_int("RLMESH_RECORD_MAX_BYTES", 1024**3)
RLMESH_ORG_DATASET_EXPORTS_BUILDING = env_int("RLMESH_ORG_DATASET_EXPORTS_BUILDING", 2)  # queued or running at once
#: Dataset exports the whole site builds at once: each holds a worker pool process for minutes, so the others wait,
#: queued, and evaluations keep the rest of the pool (size worker concurrency above this).
RLMESH_DATASET_EXPORTS_RUNNING = env_int("RLMESH_DATASET_EXPORTS_RUNNING", 1)
#: Seconds an export waiting for a build slot waits before it asks again.
RLMESH_DATASET_EXPORT_RETRY_SECONDS = env_float("RLMESH_DATASET_EXPORT_RETRY_SECONDS", 15.0)
#: Bytes of files a LeRobot checkpoint carried by an organization's image (a model car) or uploaded from the dashboard
#: may hold (evaluations/services/model_cars.py); what it is stored at also counts in the storage quota.
RLMESH_MODEL_CAR_MAX_BYTES = env_int("RLMESH_MODEL_CAR_MAX_BYTES", 16 * 1024**3)
#: Bytes of one LeRobot checkpoint archive uploaded from the dashboard (the catalog page): the largest body that path
#: accepts (rlmesh_site/asgi.py).
RLMESH_CHECKPOINT_UPLOAD_MAX_BYTES = env_int("RLMESH_CHECKPOINT_UPLOAD_MAX_BYTES", 4 * 1024**3)
