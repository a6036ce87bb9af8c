"""``/v1/evaluations/{id}/lerobot-dataset``: the evaluation's recorded episodes as a LeRobotDataset (lerobot 0.4.4),
built by a worker (``datasets.exports``) and downloaded as a zip."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from ..datasets.exports import IMAGE_MODES, ExportRefused, export_document, latest_export, ready_export, request_export
from ..media import ranged_file_response
from ..models import DatasetExport
from .base import DownloadView, OrgScopedView
from .exceptions import error_response
from .serializers import DatasetExportRequestSerializer, DatasetExportSerializer, errors

__all__ = ["LeRobotDatasetView", "LeRobotDatasetZipView"]

_409 = ("The evaluation has not ended, or it kept no episode's steps (`steps_not_recorded`: submit it with "
        '`"recordSteps": "all"` on its tasks), or an export of other `images` is being built (`export_running`, its '
        "`id` and `status` in `details`: one at a time per evaluation), or its tasks recorded differently shaped "
        "features (`features_differ`, each feature's shapes per task in `details`).")
_429 = ("The organization already builds `RLMESH_ORG_DATASET_EXPORTS_BUILDING` exports (`too_many_exports`), or too "
        "many failed authentications from this address.")
_413 = ("The body is over `DATA_UPLOAD_MAX_MEMORY_SIZE` (`payload_too_large`), or the organization has no storage "
        "left for a dataset (`storage_quota_exceeded`).")
_503 = "The lerobot environment is not installed on this platform (`lerobot_unavailable`: scripts/setup-lerobot.sh)."


def _never_asked(public_id: str):
    """The 404 for an evaluation with no dataset export yet, naming the request that makes one."""
    return error_response(404, "not_found", f"no dataset export of {public_id} was asked for yet: POST "
                          f"/v1/evaluations/{public_id}/lerobot-dataset")


def _not_ready(public_id: str, latest: DatasetExport | None, images: str | None):
    """The 404/409 of a zip request when no ready export (of ``images``) has its zip in storage."""
    if latest is None:
        return _never_asked(public_id)
    mode = latest.meta.get("images", "image")
    if latest.status == DatasetExport.Status.READY and images in (None, mode):
        return error_response(404, "not_found", "the dataset's zip is missing from storage; POST again to rebuild")
    if images not in (None, mode) or latest.status == DatasetExport.Status.READY:
        return error_response(409, "conflict", f'no export with images "{images}" is ready; POST {{"images": '
                              f'"{images}"}} to /v1/evaluations/{public_id}/lerobot-dataset')
    document = export_document(latest)
    reason = f": {document['error']}" if document["error"] else "; poll GET …/lerobot-dataset until it is ready"
    return error_response(409, "conflict", f"the dataset export is {document['status']}{reason}")


class LeRobotDatasetView(OrgScopedView):
    @extend_schema(responses={200: DatasetExportSerializer, **errors(401, 404, _404="No such evaluation, or no "
                                                                      "dataset export was asked for yet (POST first).")},
                   summary="The latest LeRobot dataset export of the evaluation and its status")
    def get(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id)
        export = latest_export(evaluation)
        if export is None:
            return _never_asked(public_id)
        return Response(export_document(export))

    @extend_schema(request=DatasetExportRequestSerializer,
                   responses={200: DatasetExportSerializer, 202: DatasetExportSerializer,
                              **errors(400, 401, 403, 404, 409, 413, 415, 429, 503, _409=_409, _413=_413,
                                       _429=_429, _503=_503)},
                   summary="Export the evaluation's recorded episodes as a LeRobot dataset (a worker builds it)",
                   description="202 with a new export (poll GET until `status` is `ready`, then download "
                   "`downloadUrl`); 200 with the export under way with the same `images`, or else the newest ready one of "
                   "those `images`. At most one export of an evaluation is built at a time. "
                   "The body may be empty.")
    def post(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id)
        data = self.read_optional_body()
        # Unknown fields are ignored, as in every request body of /v1 (planning.schema: lenient on unknown fields).
        body = DatasetExportRequestSerializer(data=data)
        body.is_valid(raise_exception=True)
        try:
            export, created = request_export(evaluation, images=body.validated_data["images"])
        except ExportRefused as exc:
            return error_response(exc.status, exc.code, exc.message, exc.details,
                                  docs="using/libero/#episodes-as-a-lerobot-dataset")
        return Response(export_document(export), status=status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK)


class LeRobotDatasetZipView(DownloadView):
    @extend_schema(parameters=[
        OpenApiParameter("images", str, OpenApiParameter.QUERY, enum=list(IMAGE_MODES), description=(
            "The export of this image storage (`image`: PNG frames, `video`: MP4 per camera); by default the newest "
            "ready export of either")),
        OpenApiParameter("Range", str, OpenApiParameter.HEADER, description="bytes=start-end, bytes=start- or "
                         "bytes=-suffix")],
                   responses={(200, "application/zip"): OpenApiTypes.BINARY,
                              (206, "application/zip"): OpenApiTypes.BINARY,
                              **errors(400, 401, 404, 409, 416, 429,
                                       _404="No such evaluation, or no dataset export was asked for.",
                                       _429="This caller already holds `RLMESH_DOWNLOADS_PER_CALLER` downloads "
                                       "(`too_many_downloads`; `Retry-After`), or too many failed authentications.",
                                       _409="No export is ready yet (the latest is queued, running or failed).")},
                   summary="The LeRobot dataset as a zip (one folder: meta/, data/, videos/); honours Range requests",
                   description="The newest ready export, of `?images=image|video` when given; a ready zip stays "
                   "downloadable while a newer export is built.")
    def get(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id)
        images = request.query_params.get("images") or None  # `?images=` (empty): either, as without it
        if images is not None and images not in IMAGE_MODES:
            return error_response(400, "invalid_request", f'"{images}" is not an image storage; use one of '
                                  f'{", ".join(IMAGE_MODES)}', [{"path": "images", "message": "not an image storage"}])
        export = ready_export(evaluation, images)
        if export is None:
            return _not_ready(public_id, latest_export(evaluation), images)
        try:
            response = ranged_file_response(request, export.file.name, content_type="application/zip")
        except FileNotFoundError:
            return error_response(404, "not_found", "the dataset's zip is missing from storage; POST again to rebuild")
        if response.status_code in (200, 206):
            response["Content-Disposition"] = f'attachment; filename="{public_id}-lerobot.zip"'
        return self.file_answer(response, "zip")
