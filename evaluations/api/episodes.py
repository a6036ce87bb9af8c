"""``/v1/evaluations/{id}/episodes`` and ``/logs``: what happened, episode by episode and line by line; and one
episode's video."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from ..choices import EpisodeStatus
from ..filtersets import EPISODE_VIEWS, EpisodeFilterSet
from ..media import episode_video_response
from ..services.image_versions import recorded_batch
from .base import DownloadView, OrgScopedView
from .pagination import CURSOR_PATTERNS, decode_cursor, encode_cursor, page_limit, query_value, take_page
from .serializers import EpisodePageSerializer, LogPageSerializer, errors

__all__ = ["EpisodeListView", "EpisodeVideoView", "LogListView"]


def _after(request) -> int:
    """The primary key the page starts after (``?cursor=``), 0 without a cursor."""
    cursor = query_value(request, "cursor")
    return decode_cursor(cursor, int)[0] if cursor else 0


_BOOLEAN = "true or false (1 or 0); another value → 400 naming the parameter"
#: The filters of EpisodeFilterSet, as the schema states them.
EPISODE_FILTERS = [
    OpenApiParameter("status", str, enum=EpisodeStatus.values, description="completed | error"),
    OpenApiParameter("success", bool, description=f"the episode succeeded: {_BOOLEAN}"),
    OpenApiParameter("task", str, description="a taskId (exact)"),
    OpenApiParameter("model", str, description="a model reference (exact)"),
    OpenApiParameter("video", bool, description=f"true: only recorded episodes, false: only unrecorded; {_BOOLEAN}"),
    OpenApiParameter("show", str, enum=list(EPISODE_VIEWS), description="the Episodes tab's shortcuts"),
]


class EpisodeListView(OrgScopedView):
    MAX_LIMIT = 1000

    @extend_schema(
        parameters=[
            OpenApiParameter("limit", {"type": "integer", "minimum": 1}, description="page size ≥ 1 (default 100; above 1000 a page holds 1000); 0, negative or not a number → 400"),
            OpenApiParameter("cursor", str, pattern=CURSOR_PATTERNS[(int,)], description="nextCursor of the previous page"),
            *EPISODE_FILTERS,
        ],
        responses={200: EpisodePageSerializer, **errors(400, 401, 404)},
        summary="Episodes of an evaluation, by workload and index",
    )
    def get(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id)
        limit = page_limit(request, default=100, maximum=self.MAX_LIMIT)
        filterset = EpisodeFilterSet(request.query_params, queryset=evaluation.episodes.select_related("workload"))
        if not filterset.is_valid():
            raise ValidationError({k: list(v) for k, v in filterset.errors.items()})
        qs = filterset.qs.order_by("pk").filter(pk__gt=_after(request))
        page, more = take_page(qs, limit)
        return Response({"items": [_episode_dict(e, evaluation.public_id) for e in page],
                         "nextCursor": encode_cursor(page[-1].pk) if more else None})


class LogListView(OrgScopedView):
    @extend_schema(
        parameters=[OpenApiParameter("limit", {"type": "integer", "minimum": 1}, description="page size ≥ 1 (default 1000; above 5000 a page holds 5000); 0, negative or not a number → 400"),
                    OpenApiParameter("cursor", str, pattern=CURSOR_PATTERNS[(int,)], description="nextCursor of the previous page")],
        responses={200: LogPageSerializer, **errors(400, 401, 404)},
        summary="Worker and runtime log lines, oldest first",
    )
    def get(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id)
        limit = page_limit(request, default=1000, maximum=5000)
        page, more = take_page(evaluation.logs.order_by("id").filter(pk__gt=_after(request)), limit)
        return Response(
            {
                "items": [
                    {"at": line.created_at, "level": line.level, "source": line.source, "message": line.message}
                    for line in page
                ],
                "nextCursor": encode_cursor(page[-1].pk) if more else None,
            }
        )


class EpisodeVideoView(DownloadView):
    @extend_schema(
        parameters=[OpenApiParameter(
            "Range", str, OpenApiParameter.HEADER, description="bytes=start-end, bytes=start- or bytes=-suffix",
            examples=[OpenApiExample("the first KiB", "bytes=0-1023"), OpenApiExample("the last 100 bytes", "bytes=-100"),
                      OpenApiExample("past the end", "bytes=1000000000-")],
        )],
        responses={(200, "video/mp4"): OpenApiTypes.BINARY, (206, "video/mp4"): OpenApiTypes.BINARY,
                   **errors(401, 404, 416, 429, _404="No such evaluation, or the episode has no video.",
                            _429="This caller already holds `RLMESH_DOWNLOADS_PER_CALLER` downloads "
                            "(`too_many_downloads`; `Retry-After`), or too many failed authentications.")},
        summary="The episode's H.264 MP4 (when its task recorded it); honours Range requests",
    )
    def get(self, request, public_id: str, episode_id: int):
        response = episode_video_response(request, self.get_evaluation(public_id), episode_id)
        # the dashboard's player gets an empty 416 and a plain 429; API clients get the envelope
        return self.file_answer(response, "video")


def _recording(e) -> dict | None:
    """What the episode's recording kept (``recording`` of an episode): its video and its steps, each whether it was
    stored and, when not whole, why (``error``) and where the recording stopped (``stoppedAtStep``); None when its
    task recorded neither."""
    def part(stored: bool, meta: dict, keys: tuple[str, ...]) -> dict | None:
        if not meta and not stored:
            return None
        return {"stored": stored, **{k: meta.get(k) for k in keys}}

    video = part(bool(e.video), e.video_meta or {}, ("error", "stoppedAtStep", "note"))
    steps = part(bool(e.steps_file), e.steps_meta or {}, ("bytes", "steps", "error", "stoppedAtStep"))
    return {"video": video, "steps": steps} if video or steps else None


def _episode_dict(e, public_id: str) -> dict:
    video = None
    if e.video:
        video = {
            "url": reverse("evaluations-api:episode-video", args=[public_id, e.pk]),
            **{k: v for k, v in e.video_meta.items() if k in ("codec", "frames", "fps", "width", "height", "bytes", "encodeMs", "renderMs")},
        }
    return {
        "id": e.pk,
        "workload": e.workload.index,
        "model": e.workload.model_ref,
        "env": e.workload.env_ref,
        "taskId": e.workload.task_id,
        "index": e.index,
        "seed": e.seed,
        "status": e.status,
        "success": e.success,
        "successSource": e.success_source or None,
        "reward": e.reward,
        "steps": e.steps,
        "terminated": e.terminated,
        "truncated": e.truncated,
        "stopCondition": e.stop_condition,
        "error": e.error or None,
        "perturbation": e.perturbation or None,
        "video": video,
        "recording": _recording(e),
        "wallMs": e.wall_ms,
        "predictMs": e.predict_ms,
        "stepMs": e.step_ms,
        "checkpointSha256": (e.workload.model_kwargs or {}).get("sha256") or None,
        "modelBatch": recorded_batch(e.workload.model_kwargs),
        "trajectoryDigest": e.trajectory_digest or None,
        "digestComparable": e.digest_comparable if e.trajectory_digest else None,
        "startedAt": e.started_at,
        "finishedAt": e.finished_at,
    }
