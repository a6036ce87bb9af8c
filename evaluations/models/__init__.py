"""Models of the evaluations app, re-exported."""

from .agents import WebhookDelivery
from .baselines import Baseline
from .datasets import DatasetExport
from .evaluations import Episode, Evaluation, EvaluationLog, Shard, Workload
from .identity import AuthSession, DeviceAuthorization, Invitation, RefreshToken
from .images import CheckpointUpload, ImageRepository, ImageVersion
from .organizations import ApiKey, Membership, Organization
from .published import PublishedScore
from .workers import WorkerProcess

__all__ = [
    "ApiKey",
    "AuthSession",
    "Baseline",
    "CheckpointUpload",
    "DatasetExport",
    "DeviceAuthorization",
    "Invitation",
    "RefreshToken",
    "Episode",
    "Evaluation",
    "EvaluationLog",
    "ImageRepository",
    "ImageVersion",
    "Membership",
    "Organization",
    "PublishedScore",
    "Shard",
    "WebhookDelivery",
    "WorkerProcess",
    "Workload",
]
