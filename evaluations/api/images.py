"""``/v1/images``: the images this organization may use (its own namespace and ``prebuilt``), one repository by
reference, deleting a version, and probing one again."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from ..models import ImageRepository
from ..selectors import images_visible_to
from ..services.catalog import ReferenceError_, parse_reference, pick_version
from ..services.probes import ProbeFailed, queue_probe
from ..services.registry import VersionInUse, delete_version
from .base import ERRORS, OrgScopedView
from .exceptions import error_response
from .serializers import ErrorSerializer, ImageSerializer

__all__ = ["ImageDetailView", "ImageListView", "ImageProbeView", "ImageVersionDeleteView"]


def _find_image(reference: str, repos):
    """``(parsed, repository, version)`` for a reference among ``repos``: the version its digest or tag names,
    else the current one (None when there is none). 404 for bad syntax or an unknown repository."""
    try:
        parsed = parse_reference(reference)
    except ReferenceError_ as exc:
        raise NotFound(str(exc)) from None
    repo = repos.filter(namespace=parsed.namespace, name=parsed.repository).first()
    if repo is None:
        raise NotFound(f"image {reference} not found")
    return parsed, repo, pick_version(repo, parsed)


class ImageListView(OrgScopedView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Images this organization may use", operation_id="images_list")
    def get(self, request):
        repos = images_visible_to(self.organization)
        kind = request.query_params.get("kind")
        if kind:
            if kind not in ("env", "model"):
                raise ValidationError({"kind": ["must be env or model"]})
            repos = repos.filter(kind=kind)
        return Response({"items": ImageSerializer(repos, many=True).data})


class ImageDetailView(OrgScopedView):
    @extend_schema(responses={200: ImageSerializer, **ERRORS}, summary="One image repository")
    def get(self, request, reference: str):
        parsed, repo, version = _find_image(reference, images_visible_to(self.organization))
        if version is None and not (parsed.digest or parsed.tag or parsed.checkpoint):
            return Response(ImageSerializer(repo).data)  # the repository exists; it has no current version
        if version is None or (parsed.checkpoint is not None and parsed.checkpoint not in version.checkpoints):
            raise NotFound(f"image {reference} not found")
        return Response(ImageSerializer(repo).data)

    @extend_schema(exclude=True)
    def delete(self, request, reference: str):
        raise ValidationError({"reference": ["name one version by digest: DELETE /v1/images/<namespace>/<repository>@sha256:…"]})


class ImageVersionDeleteView(ImageDetailView):
    """GET like any image reference; DELETE removes that version."""

    @extend_schema(request=None, responses={204: None, 409: ErrorSerializer, **ERRORS}, summary="Delete an image version (not while an evaluation uses it)")
    def delete(self, request, reference: str):
        parsed, _, version = _find_image(reference, ImageRepository.objects.filter(namespace=self.organization.slug))
        if version is None or not parsed.digest:
            raise NotFound(f"image {reference} not found; name a version of your namespace by digest (ns/repo@sha256:…)")
        try:
            delete_version(version)
        except VersionInUse as exc:
            return error_response(409, "conflict", str(exc))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ImageProbeView(OrgScopedView):
    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT, **ERRORS}, summary="Probe an image version again")
    def post(self, request, reference: str):
        _, repo, version = _find_image(reference, ImageRepository.objects.filter(namespace=self.organization.slug))
        if version is None:
            raise NotFound(f"image {reference} not found")
        try:
            queue_probe(version)
        except ProbeFailed as exc:
            return error_response(409, "conflict", str(exc))
        return Response({"reference": f"{repo.path}@{version.digest}", "probeStatus": "queued"}, status=status.HTTP_202_ACCEPTED)
