"""Response serializers for /v1, one module per resource. Every response body has one, so ``/v1/schema`` describes
what clients get (DESIGN §11). Some render the response (evaluations, images); the others document a dict the view
builds, where rendering through a serializer would change values (datetime precision, absent keys)."""

from __future__ import annotations

from .comparisons import (
    BaselineListSerializer,
    BaselineRequestSerializer,
    BaselineSerializer,
    ComparisonSerializer,
    RegressionSerializer,
)
from .datasets import DatasetExportRequestSerializer, DatasetExportSerializer
from .episodes import EpisodePageSerializer, EpisodeSerializer, LogPageSerializer
from .errors import ErrorSerializer, errors
from .evaluations import EvaluationDetailSerializer, EvaluationPageSerializer, EvaluationSerializer, PreviewSerializer
from .identity import InfoSerializer, MeSerializer, MyOrganizationsSerializer, OrganizationSerializer, RegistryInfoSerializer
from .images import ImageListSerializer, ImageSerializer, ProbeQueuedSerializer
from .reports import (
    MetricsSerializer,
    PublishedScoreListSerializer,
    PublishedScoreRequestSerializer,
    PublishedScoreSerializer,
    ScoresSerializer,
)

__all__ = [
    "PublishedScoreListSerializer",
    "PublishedScoreRequestSerializer",
    "PublishedScoreSerializer",
    "BaselineListSerializer",
    "BaselineRequestSerializer",
    "BaselineSerializer",
    "ComparisonSerializer",
    "DatasetExportRequestSerializer",
    "DatasetExportSerializer",
    "EpisodePageSerializer",
    "EpisodeSerializer",
    "ErrorSerializer",
    "EvaluationDetailSerializer",
    "EvaluationPageSerializer",
    "EvaluationSerializer",
    "ImageListSerializer",
    "ImageSerializer",
    "InfoSerializer",
    "LogPageSerializer",
    "MeSerializer",
    "MetricsSerializer",
    "MyOrganizationsSerializer",
    "OrganizationSerializer",
    "PreviewSerializer",
    "ProbeQueuedSerializer",
    "RegistryInfoSerializer",
    "RegressionSerializer",
    "ScoresSerializer",
    "errors",
]
