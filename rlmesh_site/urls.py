"""Top-level routes: admin, sign-in, the /v1 API with its schema and docs, and the dashboard."""

from django.conf import settings
from django.contrib import admin
from django_ratelimit.decorators import ratelimit

from evaluations.api import oauth
from evaluations.auth import password_sign_in
from evaluations.api.schema_view import SchemaView
from evaluations.views.docs import manual
from django.contrib.auth import views as auth_views
from django.http import JsonResponse
from django.shortcuts import redirect
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularSwaggerSplitView


def under(prefix: str) -> str:
    r"""A regex for ``prefix`` and every path below it, for the JSON 404 fallbacks.

    ``[\s\S]`` rather than ``.``: ``.`` stops at a newline, so ``/v1/a%0Ab`` used to fall through to the
    dashboard's HTML 404. A control character or space right after the prefix (``/v1%0A``) counts as below it too.
    """
    return rf"^{prefix}(?:[/\x00-\x20\x7f][\s\S]*)?$"


@csrf_exempt  # a POST to a wrong /v1 path must get this JSON 404, not Django's CSRF page
def api_not_found(request):
    return JsonResponse(
        {"error": {"code": "not_found", "message": f"no such endpoint: {request.method} {request.path}", "details": []}},
        status=404,
    )


urlpatterns = [
    # Both password forms share the one sign-in limit (evaluations.auth): failures counted from either, refused by
    # either once the address is over it; RATELIMIT_LOGIN bounds the POSTs of each form on top.
    path("admin/login/", password_sign_in(ratelimit(key="ip", rate=lambda g, r: settings.RATELIMIT_LOGIN, method="POST", block=True)(admin.site.login))),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        password_sign_in(ratelimit(key="ip", rate=lambda g, r: settings.RATELIMIT_LOGIN, method="POST", block=True)(auth_views.LoginView.as_view())),
        name="login",
    ),
    path("oauth/device_authorization", oauth.device_authorization, name="oauth-device-authorization"),
    path("oauth/token", oauth.token, name="oauth-token"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("v1/schema", SchemaView.as_view(), name="schema"),
    # The split view serves Swagger UI's init code as a script file (/v1/docs?script), not an inline <script>,
    # so the Content-Security-Policy needs no exception for the docs page.
    path("v1/docs", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    path("v1/", include("evaluations.api.urls")),
    # The manual (docs/, built into site/ by `make docs`), public like /v1/docs.
    path("docs", lambda request: redirect("/docs/", permanent=True)),
    re_path(r"^docs/(?P<path>.*)$", manual, name="manual"),
    re_path(under("v1"), api_not_found),
    # The seed-004 API for agent evaluations (evaluations/api/agents), with the same JSON 404 for unknown paths.
    path("agents/", include("evaluations.api.agents.urls")),
    re_path(under("agents"), api_not_found),
    re_path(under("oauth"), api_not_found),
    path("", include("evaluations.urls")),
]
