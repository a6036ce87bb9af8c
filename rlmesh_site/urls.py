"""Top-level routes: admin, sign-in, the /v1 API with its schema and docs, and the dashboard."""

from django.conf import settings
from django.contrib import admin
from django_ratelimit.decorators import ratelimit

from evaluations.api import oauth
from django.contrib.auth import views as auth_views
from django.http import JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView


@csrf_exempt  # a POST to a wrong /v1 path must get this JSON 404, not Django's CSRF page
def api_not_found(request, rest=""):
    return JsonResponse(
        {"error": {"code": "not_found", "message": f"no such endpoint: {request.method} {request.path}", "details": []}},
        status=404,
    )


urlpatterns = [
    # The admin's own sign-in form, rate limited like the dashboard's.
    path("admin/login/", ratelimit(key="ip", rate=lambda g, r: settings.RATELIMIT_LOGIN, method="POST", block=True)(admin.site.login)),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        ratelimit(key="ip", rate=lambda g, r: settings.RATELIMIT_LOGIN, method="POST", block=True)(auth_views.LoginView.as_view()),
        name="login",
    ),
    path("oauth/device_authorization", oauth.device_authorization, name="oauth-device-authorization"),
    path("oauth/token", oauth.token, name="oauth-token"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("v1/schema", SpectacularAPIView.as_view(), name="schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("v1/", include("evaluations.api.urls")),
    re_path(r"^v1(?:/(?P<rest>.*))?$", api_not_found),
    # The seed-004 API for agent evaluations (evaluations/api/agents), with the same JSON 404 for unknown paths.
    path("agents/", include("evaluations.api.agents.urls")),
    re_path(r"^agents(?:/(?P<rest>.*))?$", api_not_found),
    re_path(r"^oauth(?:/(?P<rest>.*))?$", api_not_found),
    path("", include("evaluations.urls")),
]
