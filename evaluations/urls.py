"""Dashboard routes. Pages answer with or without a trailing slash (APPEND_SLASH is off for the API)."""

from django.urls import path, re_path

from . import import_views, views

app_name = "evaluations"

urlpatterns = [
    path("", views.home, name="home"),
    re_path(r"^evaluations/?$", views.evaluation_list, name="evaluation_list"),
    re_path(r"^evaluations/new/?$", views.evaluation_new, name="evaluation_new"),
    re_path(r"^evaluations/import/?$", import_views.evaluation_import, name="evaluation_import"),
    path("evaluations/preview", views.evaluation_preview, name="evaluation_preview"),
    re_path(r"^evaluations/(?P<public_id>eval_[0-9a-z]+)/?$", views.evaluation_detail, name="evaluation_detail"),
    path("evaluations/<str:public_id>/progress", views.evaluation_progress, name="evaluation_progress"),
    path("evaluations/<str:public_id>/cancel", views.evaluation_cancel, name="evaluation_cancel"),
    path("evaluations/<str:public_id>/episodes/<int:episode_id>/video.mp4", views.episode_video, name="episode_video"),
    path("evaluations/<str:public_id>/request.json", views.evaluation_request_download, name="evaluation_request"),
    re_path(r"^evaluations/(?P<public_id>eval_[0-9a-z]+)/(?P<tab>overview|episodes|configuration|logs)/?$",
            views.evaluation_detail, name="evaluation_tab"),
    re_path(r"^compare/?$", views.compare, name="compare"),
    re_path(r"^images/?$", views.image_list, name="image_list"),
    path("images/versions/<int:version_id>/probes", views.image_reprobe, name="image_reprobe"),
    re_path(r"^settings/?$", views.organization_settings, name="settings"),
    path("settings/api-keys/<int:key_id>/revoke", views.api_key_revoke, name="api_key_revoke"),
    path("organizations/switch", views.organization_switch, name="organization_switch"),
    path("settings/members/<int:membership_id>", views.member_update, name="member_update"),
    path("settings/invitations", views.invitation_create, name="invitation_create"),
    path("invitations/<str:token>", views.invitation_accept, name="invitation_accept"),
]
