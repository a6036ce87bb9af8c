"""Celery queue names; keep in sync with the worker command lines (Makefile, deployment)."""

from enum import StrEnum


class Queue(StrEnum):
    #: Shards: long-running episode loops.
    SHARDS = "shards"
    #: Housekeeping: the reaper.
    MAINTENANCE = "maintenance"
