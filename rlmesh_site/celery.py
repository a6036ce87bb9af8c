"""Celery application: configured from Django settings (``CELERY_*``), tasks autodiscovered."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rlmesh_site.settings")

app = Celery("rlmesh_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# One schedule, one place. The reaper re-queues shards whose worker died; every
# 30 s keeps recovery quick without loading the database.
app.conf.beat_schedule = {
    "reap-orphaned-shards": {"task": "evaluations.reap_shards", "schedule": 30.0},
}
