from django.urls import path, re_path

from . import views

app_name = "evaluations"

urlpatterns = [
    path("", views.home, name="home"),
    # Dashboard pages answer with or without a trailing slash (APPEND_SLASH is off for the API).
    re_path(r"^evaluations/?$", views.evaluation_list, name="evaluation_list"),
    re_path(r"^evaluations/(?P<public_id>[^/]+)/?$", views.evaluation_detail, name="evaluation_detail"),
]
