"""Dashboard middleware."""

from __future__ import annotations

from django.shortcuts import render


class NoOrganizationMiddleware:
    """Turn ``views.NoOrganization`` into a page that says what to do instead of a bare 404."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from .tenancy import NoOrganization

        if isinstance(exception, NoOrganization):
            return render(request, "evaluations/no_organization.html", status=403)
        return None
