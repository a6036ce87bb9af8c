"""``/v1/images``: the images this organization may use (its own namespace and ``prebuilt``), one repository by
reference, one version by digest (read or delete), and probing a version again."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, MethodNotAllowed, NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response

from ..models.images import PREBUILT_NAMESPACE
from ..selectors import images_visible_to
from ..services.image_versions import REFERENCE_PATTERN, MalformedReference, parse_reference, pick_version
from ..services.probes import ProbeFailed, queue_probe
from ..services.registry import VersionInUse, delete_version
from .base import OrgScopedView
from .exceptions import error_response
from .pagination import query_value
from .serializers import ImageListSerializer, ImageSerializer, ProbeQueuedSerializer, errors

__all__ = ["ImageDetailView", "ImageListView", "ImageProbeView", "ImageVersionView"]

_REFERENCE = OpenApiParameter(
    "reference", str, OpenApiParameter.PATH, pattern=REFERENCE_PATTERN,
    description="namespace/repository[/checkpoint][:tag], e.g. prebuilt/ppo/cartpole or a/my-env:latest",
)


# Paths that another image route answers, and what it says to a method it does not take.
_PROBES_405 = "The path ends in `/probes`: it is then the probe route, which takes POST only."
_NO_DIGEST_400 = ("The digest is not sha256:<64 hex digits>: the path then names no version, and a DELETE of a "
                  "repository is refused.")


class InvalidReference(APIException):
    """A reference that is not well-formed: 400 ``invalid_reference`` with what is wrong (never a 404)."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid_reference"


_400_REFERENCE = ("`invalid_reference`: the reference is not well-formed; the message says what is wrong (uppercase "
                  "letters: names are lowercase; a character a name cannot hold; a tag where a digest is expected; "
                  "no namespace; a registry host).")
_404_REFERENCE = "A well-formed reference to no image this organization may use (or to a tag, digest or checkpoint it lacks)."
_403_PREBUILT = ("`forbidden`: the reference names a prebuilt image. Prebuilt images ship with the platform: they are "
                 "never probed or deleted (their versions passed when the platform started); push to your namespace.")


def _find_image(reference: str, repos):
    """``(parsed, repository, version)`` for a reference among ``repos``: the version its digest or tag names,
    else the current one (None when there is none). 400 ``invalid_reference`` for a malformed reference, 404 for a
    well-formed one naming no repository of ``repos``."""
    try:
        parsed = parse_reference(reference)
    except MalformedReference as exc:
        raise InvalidReference(str(exc)) from None
    repo = repos.filter(namespace=parsed.namespace, name=parsed.repository).first()
    if repo is None:
        raise NotFound(f"image {reference} not found")
    return parsed, repo, pick_version(repo, parsed)


def _own_image(view, reference: str):
    """``_find_image`` among the images the caller may change: its own namespace's. A prebuilt image (visible to
    everyone, changed by no one) is a 403 that says so, not a 404 for an image a GET shows."""
    parsed, repo, version = _find_image(reference, images_visible_to(view.organization))
    if repo.namespace == PREBUILT_NAMESPACE and view.organization.slug != PREBUILT_NAMESPACE:
        raise PermissionDenied(f"{repo.path} is a prebuilt image: prebuilt images ship with the platform and are never "
                               "probed or deleted (their versions passed when the platform started); push your own "
                               f"images to {view.organization.slug}/…")
    return parsed, repo, version


class ImageListView(OrgScopedView):
    @extend_schema(
        parameters=[OpenApiParameter("kind", str, enum=["env", "model"], description="only envs or only models")],
        responses={200: ImageListSerializer, **errors(400, 401)}, summary="Images this organization may use",
        operation_id="images_list",
    )
    def get(self, request):
        repos = images_visible_to(self.organization)
        kind = query_value(request, "kind")
        if kind:
            if kind not in ("env", "model"):
                raise ValidationError({"kind": ["must be env or model"]})
            repos = repos.filter(kind=kind)
        return Response({"items": ImageSerializer(repos, many=True).data})


class ImageDetailView(OrgScopedView):
    @extend_schema(
        parameters=[_REFERENCE],
        responses={200: ImageSerializer, **errors(400, 401, 404, 405, _400=_400_REFERENCE, _404=_404_REFERENCE, _405=_PROBES_405)},
        summary="One image repository, by any reference to it",
        operation_id="images_retrieve",
    )
    def get(self, request, reference: str):
        return self.repository_response(reference)

    #: Answered but not supported: the DELETE here is only a pointer to the version route (always a 400), so
    #: ``Allow`` (of OPTIONS and of a 405) leaves it out, as the schema does.
    unlisted_methods: tuple[str, ...] = ("DELETE",)

    @property
    def allowed_methods(self):
        return [m for m in super().allowed_methods if m not in self.unlisted_methods]

    @extend_schema(exclude=True)  # a 405 that points to the version route, which deletes
    def delete(self, request, reference: str):
        raise MethodNotAllowed("DELETE", "a repository is not deleted; name one version by digest: "
                                         "DELETE /v1/images/<namespace>/<repository>@sha256:…")

    def repository_response(self, reference: str) -> Response:
        """The repository a reference names; 404 when the tag, digest or checkpoint it names does not exist."""
        parsed, repo, version = _find_image(reference, images_visible_to(self.organization))
        if version is None and not (parsed.digest or parsed.tag or parsed.checkpoint):
            return Response(ImageSerializer(repo).data)  # the repository exists; it has no current version
        if version is None or (parsed.checkpoint is not None and parsed.checkpoint not in version.checkpoints):
            raise NotFound(f"image {reference} not found")
        return Response(ImageSerializer(repo).data)


# The patterns are the route's groups (urls.py), so the schema generates only paths this route answers.
_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, pattern=REFERENCE_PATTERN,
                         description="namespace/repository[/checkpoint][:tag], what precedes the @")
_DIGEST = OpenApiParameter("digest", str, OpenApiParameter.PATH, pattern=r"^sha256:[0-9a-f]{64}$",
                           description="sha256:<64 hex digits>")


class ImageVersionView(ImageDetailView):
    """One image version, by digest: read it like any reference, or delete it."""

    unlisted_methods = ()

    # Its own route and schema path (``{name}@{digest}``), so the digest's pattern describes this route only and
    # ``GET /v1/images/{reference}`` stays any reference.

    @extend_schema(
        parameters=[_NAME, _DIGEST],
        responses={200: ImageSerializer, **errors(400, 401, 404, 405, _400=_400_REFERENCE, _404=_404_REFERENCE, _405=_PROBES_405)},
        summary="The repository of one image version", operation_id="images_version_retrieve",
    )
    def get(self, request, name: str, digest: str):
        return self.repository_response(f"{name}@{digest}")

    @extend_schema(
        parameters=[_NAME, _DIGEST], request=None,
        responses={204: None, **errors(400, 401, 403, 404, 405, 409, _400=f"{_NO_DIGEST_400} {_400_REFERENCE}", _403=_403_PREBUILT,
                                       _405="The path names a repository, not a version (no @sha256:<64 hex digits>).",
                                       _404=_404_REFERENCE, _409="An active evaluation uses the version.")},
        summary="Delete an image version (not while an evaluation uses it)", operation_id="images_version_destroy",
    )
    def delete(self, request, name: str, digest: str):
        reference = f"{name}@{digest}"
        parsed, _, version = _own_image(self, reference)
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
        responses={202: ProbeQueuedSerializer, **errors(400, 401, 403, 404, 409, _400=_400_REFERENCE, _403=_403_PREBUILT,
                                                        _404=_404_REFERENCE, _409="The version was deleted; push it again.")},
        summary="Probe an image version again",
        description="Probes the version the reference names (its current one without a tag or digest). Only images of "
        "the caller's namespace are probed: a prebuilt image is a 403, another organization's a 404.",
    )
    def post(self, request, reference: str):
        _, repo, version = _own_image(self, reference)
        if version is None:
            raise NotFound(f"image {reference} not found")
        try:
            queue_probe(version)
        except ProbeFailed as exc:
            return error_response(409, "conflict", str(exc))
        return Response({"reference": f"{repo.path}@{version.digest}", "probeStatus": "queued"}, status=status.HTTP_202_ACCEPTED)
