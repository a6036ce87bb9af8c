"""``POST /v1/evaluations/imports``: import a local run (an ``rlmesh.result.v1`` bundle) as a completed evaluation."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import parsers, serializers, status
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from ..imports import import_bundle
from ..models import ApiKey
from ..planning import RequestInvalid
from ..selectors import evaluation_detail_queryset
from .base import OrgScopedView
from .parsers import OctetStreamZipBodyParser, PayloadTooLarge, ZipBodyParser
from .serializers import EvaluationDetailSerializer, errors

__all__ = ["EvaluationImportView"]

#: What the import takes, said by its 415 (DRF's own says only which type it refused).
ACCEPTED = ('send the bundle as multipart/form-data with the .zip in the file field "bundle" (optional field "name"), '
            "or as the raw body with Content-Type: application/zip (optional ?name=)")


class _NotABundle(UnsupportedMediaType):
    """A 415 that says what the import accepts, linking the imports page of the manual."""

    docs_page = "using/imports/"

    def __init__(self, detail):
        media_type = str(detail).split('"')[1] if str(detail).count('"') >= 2 else "this Content-Type"
        super().__init__(media_type, detail=f"{ACCEPTED}; {media_type} is not a bundle")

class EvaluationImportView(OrgScopedView):
    """Members and above import bundles; viewers get 403 (``IsOrganizationMember``)."""

    parser_classes = [parsers.MultiPartParser, ZipBodyParser, OctetStreamZipBodyParser]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "imports"  # RATELIMIT_IMPORT: uploads write to disk

    @extend_schema(
        request={
            "multipart/form-data": inline_serializer(
                "EvaluationImportRequest",
                {
                    "bundle": serializers.FileField(help_text="the .zip that rlmesh.Recorder.export() wrote"),
                    "name": serializers.CharField(required=False, help_text="evaluation name (default: Import of <file name>)"),
                },
            ),
            "application/zip": OpenApiTypes.BINARY,
        },
        parameters=[OpenApiParameter("name", str, description="evaluation name (a multipart `name` field wins)")],
        responses={201: EvaluationDetailSerializer, **errors(400, 401, 403, 409, 413, 415, 429)},
        summary="Import a local run: an rlmesh.result.v1 bundle becomes a completed evaluation",
        description=(
            "Send the bundle as the multipart field `bundle` (optional field `name`), or as a raw `application/zip` "
            "body (optional `?name=`; the file name from `Content-Disposition`). Errors name a path: `bundle`, "
            "`bundle:<zip member>` or `result.json$.<JSON path>` (e.g. `result.json$.workloads[0].episodes[3].reward`)."
        ),
    )
    def post(self, request):
        limit = settings.RLMESH_IMPORT_MAX_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            raise PayloadTooLarge(f"request body is {length} bytes; the limit for a bundle is {limit} (RLMESH_IMPORT_MAX_BYTES)")
        try:
            data = request.data
        except UnsupportedMediaType as exc:
            raise _NotABundle(exc.detail) from None
        except ParseError as exc:
            raise RequestInvalid([{"path": "bundle", "message": f"the upload could not be read: {exc.detail}"}]) from None
        raw_upload = hasattr(data, "read")
        bundle = data if raw_upload else request.FILES.get("bundle")
        # The multipart field wins; ?name= names a raw body's evaluation and a multipart upload's without the field.
        name = ("" if raw_upload else data.get("name", "")) or request.query_params.get("name", "")
        if bundle is None:
            raise RequestInvalid([{"path": "bundle", "message": "is required: send the .zip as the multipart field bundle, or as an application/zip body"}])
        try:
            evaluation = import_bundle(
                bundle, organization=self.organization, user=request.user, name=str(name),
                api_key=request.auth if isinstance(request.auth, ApiKey) else None,
            )
        finally:
            if raw_upload:
                bundle.close()
        body = EvaluationDetailSerializer(self.get_evaluation(evaluation.public_id, evaluation_detail_queryset())).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": f"/v1/evaluations/{evaluation.public_id}"})
