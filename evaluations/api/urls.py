"""/v1 routes: exact paths, no trailing slashes (the official CLI posts to these verbatim)."""

from django.urls import path, re_path

from . import import_views, registry_views, views

app_name = "evaluations-api"

urlpatterns = [
    path("info", views.InfoView.as_view(), name="info"),
    path("me", views.MeView.as_view(), name="me"),
    path("me/organizations", views.MyOrganizationsView.as_view(), name="me-organizations"),
    path("me/session", views.MySessionView.as_view(), name="me-session"),
    path("evaluation-previews", views.EvaluationPreviewView.as_view(), name="evaluation-previews"),
    path("evaluations", views.EvaluationListView.as_view(), name="evaluations"),
    # Before evaluations/<public_id>, which would otherwise take "imports" for an id.
    path("evaluations/imports", import_views.EvaluationImportView.as_view(), name="evaluation-imports"),
    path("evaluations/<str:public_id>", views.EvaluationDetailView.as_view(), name="evaluation"),
    path("evaluations/<str:public_id>/cancellations", views.CancellationView.as_view(), name="cancellations"),
    path("evaluations/<str:public_id>/scores", views.ScoresView.as_view(), name="scores"),
    path("evaluations/<str:public_id>/metrics", views.MetricsView.as_view(), name="metrics"),
    path("evaluations/<str:public_id>/episodes", views.EpisodeListView.as_view(), name="episodes"),
    path("evaluations/<str:public_id>/episodes/<int:episode_id>/video", views.EpisodeVideoView.as_view(), name="episode-video"),
    path("evaluations/<str:public_id>/logs", views.LogListView.as_view(), name="logs"),
    path("registry/info", views.RegistryInfoView.as_view(), name="registry-info"),
    path("registry/token", registry_views.registry_token, name="registry-token"),
    path("registry/events", registry_views.registry_events, name="registry-events"),
    re_path(r"^images/(?P<reference>.+)/probes$", views.ImageProbeView.as_view(), name="image-probes"),
    re_path(r"^images/(?P<reference>.+@sha256:[0-9a-f]{64})$", views.ImageVersionDeleteView.as_view(), name="image-version"),
    path("images", views.ImageListView.as_view(), name="images"),
    path("images/<path:reference>", views.ImageDetailView.as_view(), name="image"),
]
