"""The image catalog page: repositories, versions, tags, probe status and log, scenario catalogs; probing again;
uploading a LeRobot checkpoint, which becomes a model-car image of the organization (services.model_cars)."""

from __future__ import annotations

import shutil

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from .. import dispatch
from ..choices import WRITE_ROLES
from ..forms import CheckpointUploadForm
from ..models import CheckpointUpload, ImageRepository, ImageVersion
from ..selectors import images_visible_to
from ..services import model_cars
from ..services.probes import ProbeFailed, queue_probe
from ..tenancy import active_membership, active_organization, role_required

#: Uploads listed on the page.
RECENT_UPLOADS = 10


def _page(request: HttpRequest, form: CheckpointUploadForm | None = None, status: int = 200) -> HttpResponse:
    org = active_organization(request)
    context = {"repositories": images_visible_to(org), "upload_form": form or CheckpointUploadForm(),
               "uploads": CheckpointUpload.objects.filter(organization=org)[:RECENT_UPLOADS],
               "upload_max_bytes": settings.RLMESH_CHECKPOINT_UPLOAD_MAX_BYTES}
    return render(request, "evaluations/image_list.html", context, status=status)


@login_required
@require_GET
def image_list(request: HttpRequest) -> HttpResponse:
    return _page(request)


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


@login_required
@require_POST
@role_required(WRITE_ROLES, "viewers cannot upload checkpoints")
def checkpoint_upload(request: HttpRequest) -> HttpResponse:
    """Unpack an uploaded LeRobot checkpoint (with the protections imports have), inspect it as an installed one is
    inspected, and queue its build into ``<namespace>/<repository>:<tag>``; the push then makes a version that is
    probed as any other. A bad archive or checkpoint re-renders the page with the reason (400), one past the
    organization's storage quota too (413); nothing is kept of a refused upload."""
    org = active_membership(request).organization
    form = CheckpointUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, form, status=400)
    archive, name, tag = form.cleaned_data["archive"], form.cleaned_data["repository"], form.cleaned_data["tag"]
    if archive.size > org.storage_left():
        form.add_error("archive", f"it takes {archive.size} bytes but the organization has {max(org.storage_left(), 0)} "
                       "bytes of its storage quota left (RLMESH_ORG_STORAGE_QUOTA_BYTES)")
        return _page(request, form, status=413)
    existing = ImageRepository.objects.filter(namespace=org.slug, name=name).first()
    if existing is not None and existing.kind == "env":
        form.add_error("repository", f"{existing.path} holds env images; a checkpoint is a model")
        return _page(request, form, status=400)
    try:
        with transaction.atomic():
            upload = CheckpointUpload.objects.create(organization=org, created_by=request.user, repository=name,
                                                     tag=tag, size=archive.size)
            scratch = model_cars.upload_folder(upload)
            try:
                folder = model_cars.unpack_upload(archive, archive.name, scratch)
                report = model_cars.inspect_folder(folder)
                if report["problem"]:
                    raise model_cars.CheckpointRefused(report["problem"])
            except BaseException:
                shutil.rmtree(scratch, ignore_errors=True)
                raise
            dispatch.send_checkpoint_upload(upload.pk)
    except model_cars.CheckpointRefused as exc:
        form.add_error("archive", str(exc))
        return _page(request, form, status=400)
    messages.info(request, f"{report['type']} checkpoint received: building {org.slug}/{name}:{tag}; its probe follows "
                  "the push.")
    return redirect("evaluations:image_list")
