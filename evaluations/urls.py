"""Dashboard routes. Pages answer with or without a trailing slash (APPEND_SLASH is off for the API)."""

from django.urls import path, re_path

from .views import agent_launch, agents, baselines, compare, datasets, evaluations, identity, images, imports, launch, organizations, \
    settings

app_name = "evaluations"

EVAL = r"(?P<public_id>eval_[0-9a-z]+)"

urlpatterns = [
    path("", evaluations.home, name="home"),
    re_path(r"^evaluations/?$", evaluations.evaluation_list, name="evaluation_list"),
    re_path(r"^evaluations/new/?$", launch.evaluation_new, name="evaluation_new"),
    re_path(r"^evaluations/agents/new/?$", agent_launch.agent_run_new, name="agent_run_new"),
    re_path(r"^evaluations/import/?$", imports.evaluation_import, name="evaluation_import"),
    path("evaluations/preview", launch.evaluation_preview, name="evaluation_preview"),
    re_path(rf"^evaluations/{EVAL}/?$", evaluations.evaluation_detail, name="evaluation_detail"),
    path("evaluations/<str:public_id>/progress", evaluations.evaluation_progress, name="evaluation_progress"),
    path("evaluations/<str:public_id>/cancel", evaluations.evaluation_cancel, name="evaluation_cancel"),
    path("evaluations/<str:public_id>/baseline", baselines.evaluation_baseline, name="evaluation_baseline"),
    path("evaluations/<str:public_id>/episodes/<int:episode_id>/video.mp4", evaluations.episode_video, name="episode_video"),
    path("evaluations/<str:public_id>/episodes/<int:episode_id>/transcript", agents.episode_transcript,
         name="episode_transcript"),
    path("evaluations/<str:public_id>/episodes/<int:episode_id>/transcript/<str:name>", agents.transcript_screenshot,
         name="transcript_screenshot"),
    path("settings/webhook-secret/rotate", agents.webhook_secret_rotate, name="webhook_secret_rotate"),
    path("evaluations/<str:public_id>/lerobot-dataset", datasets.lerobot_dataset_panel, name="lerobot_dataset_panel"),
    path("evaluations/<str:public_id>/lerobot-dataset/export", datasets.lerobot_dataset_export,
         name="lerobot_dataset_export"),
    path("evaluations/<str:public_id>/lerobot-dataset.zip", datasets.lerobot_dataset_download,
         name="lerobot_dataset_download"),
    path("evaluations/<str:public_id>/request.json", evaluations.evaluation_request_download, name="evaluation_request"),
    re_path(rf"^evaluations/{EVAL}/(?P<tab>overview|episodes|configuration|logs)/?$",
            evaluations.evaluation_detail, name="evaluation_tab"),
    re_path(r"^compare/?$", compare.compare, name="compare"),
    re_path(r"^images/?$", images.image_list, name="image_list"),
    path("images/versions/<int:version_id>/probes", images.image_reprobe, name="image_reprobe"),
    path("images/checkpoints", images.checkpoint_upload, name="checkpoint_upload"),
    re_path(r"^settings/?$", settings.organization_settings, name="settings"),
    path("settings/api-keys/<int:key_id>/revoke", settings.api_key_revoke, name="api_key_revoke"),
    path("organizations/switch", organizations.organization_switch, name="organization_switch"),
    path("settings/members/<int:membership_id>", organizations.member_update, name="member_update"),
    path("settings/invitations", organizations.invitation_create, name="invitation_create"),
    path("invitations/<str:token>", organizations.invitation_accept, name="invitation_accept"),
    re_path(r"^activate/?$", identity.activate, name="activate"),
]
