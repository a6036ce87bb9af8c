"""``/v1/images``: the images this organization may use (its own namespace and ``prebuilt``), one repository by
reference, one version by digest (read or delete), and probing a version again."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from ..models import ImageRepository
from ..selectors import images_visible_to
from ..services.catalog import ReferenceError_, parse_reference, pick_version
from ..services.probes import ProbeFailed, queue_probe
from ..services.registry import VersionInUse, delete_version
from .base import OrgScopedView
from .exceptions import error_response
from .serializers import ImageListSerializer, ImageSerializer, ProbeQueuedSerializer, errors

__all__ = ["ImageDetailView", "ImageListView", "ImageProbeView", "ImageVersionView"]

_REFERENCE = OpenApiParameter(
    "reference", str, OpenApiParameter.PATH, pattern=r"^.+$",
    description="namespace/repository[/checkpoint][:tag], e.g. prebuilt/ppo/cartpole or a/my-env:latest",
)


# Paths that another image route answers, and what it says to a method it does not take.
_PROBES_405 = "The path ends in `/probes`: it is then the probe route, which takes POST only."
_NO_DIGEST_400 = ("The digest is not sha256:<64 hex digits>: the path then names no version, and a DELETE of a "
                  "repository is refused.")


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
    @extend_schema(
        parameters=[OpenApiParameter("kind", str, enum=["env", "model"], description="only envs or only models")],
        responses={200: ImageListSerializer, **errors(400, 401)}, summary="Images this organization may use",
        operation_id="images_list",
    )
    def get(self, request):
        repos = images_visible_to(self.organization)
        kind = request.query_params.get("kind")
        if kind:
            if kind not in ("env", "model"):
                raise ValidationError({"kind": ["must be env or model"]})
            repos = repos.filter(kind=kind)
        return Response({"items": ImageSerializer(repos, many=True).data})


class ImageDetailView(OrgScopedView):
    @extend_schema(
        parameters=[_REFERENCE],
        responses={200: ImageSerializer, **errors(401, 404, 405, _405=_PROBES_405)},
        summary="One image repository, by any reference to it",
        operation_id="images_retrieve",
    )
    def get(self, request, reference: str):
        return self.repository_response(reference)

    @extend_schema(exclude=True)  # a helpful 400 for a DELETE without a digest; the version route deletes
    def delete(self, request, reference: str):
        raise ValidationError({"reference": ["name one version by digest: DELETE /v1/images/<namespace>/<repository>@sha256:…"]})

    def repository_response(self, reference: str) -> Response:
        """The repository a reference names; 404 when the tag, digest or checkpoint it names does not exist."""
        parsed, repo, version = _find_image(reference, images_visible_to(self.organization))
        if version is None and not (parsed.digest or parsed.tag or parsed.checkpoint):
            return Response(ImageSerializer(repo).data)  # the repository exists; it has no current version
        if version is None or (parsed.checkpoint is not None and parsed.checkpoint not in version.checkpoints):
            raise NotFound(f"image {reference} not found")
        return Response(ImageSerializer(repo).data)


# The patterns are the route's groups (urls.py), so the schema generates only paths this route answers.
_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, pattern=r"^.+$",
                         description="namespace/repository[/checkpoint][:tag], what precedes the @")
_DIGEST = OpenApiParameter("digest", str, OpenApiParameter.PATH, pattern=r"^sha256:[0-9a-f]{64}$",
                           description="sha256:<64 hex digits>")


class ImageVersionView(ImageDetailView):
    """One image version, by digest: read it like any reference, or delete it."""

    # Its own route and schema path (``{name}@{digest}``), so the digest's pattern describes this route only and
    # ``GET /v1/images/{reference}`` stays any reference.

    @extend_schema(
        parameters=[_NAME, _DIGEST], responses={200: ImageSerializer, **errors(401, 404, 405, _405=_PROBES_405)},
        summary="The repository of one image version", operation_id="images_version_retrieve",
    )
    def get(self, request, name: str, digest: str):
        return self.repository_response(f"{name}@{digest}")

    @extend_schema(
        parameters=[_NAME, _DIGEST], request=None,
        responses={204: None, **errors(400, 401, 403, 404, 409, _400=_NO_DIGEST_400, _409="An active evaluation uses the version.")},
        summary="Delete an image version (not while an evaluation uses it)", operation_id="images_version_destroy",
    )
    def delete(self, request, name: str, digest: str):
        reference = f"{name}@{digest}"
        parsed, _, version = _find_image(reference, ImageRepository.objects.filter(namespace=self.organization.slug))
        if version is None or not parsed.digest:
            raise NotFound(f"image {reference} not found; name a version of your namespace by digest (ns/repo@sha256:…)")
        try:
            delete_version(version)
        except VersionInUse as exc:
            return error_response(409, "conflict", str(exc))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ImageProbeView(OrgScopedView):
    @extend_schema(
        parameters=[_REFERENCE], request=None,
        responses={202: ProbeQueuedSerializer, **errors(401, 403, 404, 409, _409="The version was deleted; push it again.")},
        summary="Probe an image version again",
    )
    def post(self, request, reference: str):
        _, repo, version = _find_image(reference, ImageRepository.objects.filter(namespace=self.organization.slug))
        if version is None:
            raise NotFound(f"image {reference} not found")
        try:
            queue_probe(version)
        except ProbeFailed as exc:
            return error_response(409, "conflict", str(exc))
        return Response({"reference": f"{repo.path}@{version.digest}", "probeStatus": "queued"}, status=status.HTTP_202_ACCEPTED)
