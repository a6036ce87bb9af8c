"""/v1 routes: exact paths, no trailing slashes (the official CLI posts to these verbatim)."""

from django.urls import path, re_path

from . import baselines, comparisons, datasets, episodes, evaluations, images, imports, info, me, published_scores, registry

app_name = "evaluations-api"

urlpatterns = [
    path("info", info.InfoView.as_view(), name="info"),
    path("me", me.MeView.as_view(), name="me"),
    path("me/organizations", me.MyOrganizationsView.as_view(), name="me-organizations"),
    path("me/session", me.MySessionView.as_view(), name="me-session"),
    path("evaluation-previews", evaluations.EvaluationPreviewView.as_view(), name="evaluation-previews"),
    path("evaluations", evaluations.EvaluationListView.as_view(), name="evaluations"),
    # Before evaluations/<public_id>, which would otherwise take "imports" for an id.
    path("evaluations/imports", imports.EvaluationImportView.as_view(), name="evaluation-imports"),
    path("evaluations/<str:public_id>", evaluations.EvaluationDetailView.as_view(), name="evaluation"),
    path("evaluations/<str:public_id>/cancellations", evaluations.CancellationView.as_view(), name="cancellations"),
    path("evaluations/<str:public_id>/scores", evaluations.ScoresView.as_view(), name="scores"),
    path("evaluations/<str:public_id>/metrics", evaluations.MetricsView.as_view(), name="metrics"),
    path("evaluations/<str:public_id>/episodes", episodes.EpisodeListView.as_view(), name="episodes"),
    path("evaluations/<str:public_id>/episodes/<int:episode_id>/video", episodes.EpisodeVideoView.as_view(), name="episode-video"),
    path("evaluations/<str:public_id>/logs", episodes.LogListView.as_view(), name="logs"),
    path("evaluations/<str:public_id>/lerobot-dataset", datasets.LeRobotDatasetView.as_view(), name="lerobot-dataset"),
    path("evaluations/<str:public_id>/lerobot-dataset.zip", datasets.LeRobotDatasetZipView.as_view(),
         name="lerobot-dataset-zip"),
    path("comparisons", comparisons.ComparisonView.as_view(), name="comparisons"),
    path("baselines", baselines.BaselineListView.as_view(), name="baselines"),
    path("published-scores", published_scores.PublishedScoreListView.as_view(), name="published-scores"),
    path("published-scores/<int:score_id>", published_scores.PublishedScoreDetailView.as_view(), name="published-score"),
    path("baselines/<path:tag>", baselines.BaselineDetailView.as_view(), name="baseline"),
    path("registry/info", registry.RegistryInfoView.as_view(), name="registry-info"),
    path("registry/token", registry.registry_token, name="registry-token"),
    path("registry/events", registry.registry_events, name="registry-events"),
    re_path(r"^images/(?P<reference>.+)/probes$", images.ImageProbeView.as_view(), name="image-probes"),
    # The same URLs as ever (anything@sha256:<hex>); named groups give the version its own schema path.
    re_path(r"^images/(?P<name>.+)@(?P<digest>sha256:[0-9a-f]{64})$", images.ImageVersionView.as_view(), name="image-version"),
    path("images", images.ImageListView.as_view(), name="images"),
    path("images/<path:reference>", images.ImageDetailView.as_view(), name="image"),
]
