"""The image catalog page: repositories, versions, tags, probe status and log, scenario catalogs; probing again."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from ..choices import WRITE_ROLES
from ..models import ImageVersion
from ..selectors import images_visible_to
from ..services.probes import ProbeFailed, queue_probe
from ..tenancy import active_membership, active_organization, role_required


@login_required
@require_GET
def image_list(request: HttpRequest) -> HttpResponse:
    org = active_organization(request)
    return render(request, "evaluations/image_list.html", {"repositories": images_visible_to(org)})


@login_required
@require_POST
@role_required(WRITE_ROLES, "viewers cannot probe images")
def image_reprobe(request: HttpRequest, version_id: int) -> HttpResponse:
    """Queue another probe of one of the organization's own image versions."""
    membership = active_membership(request)
    version = ImageVersion.objects.filter(pk=version_id, repository__namespace=membership.organization.slug).first()
    if version is None:
        raise Http404("no such image version")
    try:
        queue_probe(version)
    except ProbeFailed as exc:
        messages.error(request, str(exc))
        return redirect("evaluations:image_list")
    messages.info(request, f"Probe of {version.repository.path}@{version.digest[:19]}… queued.")
    return redirect("evaluations:image_list")
