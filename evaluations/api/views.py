"""The /v1 endpoints the official ``rlmesh`` CLI and ``rlmesh.platform.Client`` call (spec/PLATFORM_API.md)."""

from __future__ import annotations

import base64
import json

from django.conf import settings
from django.db.models import Count, Prefetch, Q
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, status
from rest_framework.exceptions import NotAuthenticated, NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView


from ..choices import WRITE_ROLES, EpisodeStatus, cancel_refusal, may_cancel
from ..filtersets import EvaluationFilterSet
from ..media import episode_video_response
from ..models import ApiKey, Evaluation, ImageRepository, Membership, Workload
from ..services.registry import VersionInUse, delete_version
from ..services.probes import ProbeFailed, queue_probe
from ..reports import evaluation_metrics, evaluation_scores
from ..request_schema import EvaluationRequestSerializer
from ..scoring import GROUP_FIELDS
from ..services.catalog import ReferenceError_, parse_reference
from ..services.evaluations import CancelRefused, cancel_evaluation, create_evaluation
from ..services.identity import SessionAuth, revoke_session
from ..services.planning import parse_request_body, plan_evaluation
from .exceptions import error_response
from .parsers import check_size
from .serializers import (
    ErrorSerializer,
    EvaluationDetailSerializer,
    EvaluationSerializer,
    ImageSerializer,
    PreviewSerializer,
)

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}


class OrgScopedView(APIView):
    """Base for authenticated endpoints: ``self.organization`` is the caller's organization."""

    @property
    def organization(self):
        return self.request._request.organization

    def get_evaluation(self, public_id: str, queryset=None) -> Evaluation:
        """The organization's evaluation with this id; another organization's is simply not found (404)."""
        qs = queryset if queryset is not None else Evaluation.objects.select_related("creator")
        evaluation = qs.for_org(self.organization).filter(public_id=public_id).first()
        if evaluation is None:
            raise NotFound(f"evaluation {public_id} not found")
        return evaluation

    def read_request_body(self) -> tuple[str, dict]:
        """The raw body (as text, byte-for-byte) and its parsed JSON object; RequestInvalid otherwise."""
        check_size(self.request)
        raw = self.request._request.body
        data = parse_request_body(raw)
        return raw.decode("utf-8"), data


# --------------------------------------------------------------------- info
class InfoView(APIView):
    """Discovery document (no authentication)."""

    authentication_classes: list = []
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, summary="Platform discovery")
    def get(self, request):
        return Response(
            {
                "name": "RLMesh evaluation platform",
                "version": "1",
                "rlmesh": "0.1.0",
                "workflowEditions": [settings.RLMESH_WORKFLOW_EDITION],
                "auth": {
                    "cli": {"clientId": settings.RLMESH_CLI_CLIENT_ID},
                    "deviceAuthorizationEndpoint": f"{settings.PUBLIC_URL}/oauth/device_authorization",
                    "tokenEndpoint": f"{settings.PUBLIC_URL}/oauth/token",
                    "issuer": settings.PUBLIC_URL,
                },
                "urls": {"dashboard": settings.PUBLIC_URL, "api": f"{settings.PUBLIC_URL}/v1", "docs": f"{settings.PUBLIC_URL}/v1/docs"},
            }
        )


# ------------------------------------------------------------------ identity
def _organization_dict(org, *, active: bool | None = None) -> dict:
    data = {"id": org.pk, "providerId": org.provider_id, "name": org.name, "registryNamespace": org.slug}
    if active is not None:
        data["active"] = active
    return data


class MeView(OrgScopedView):
    """Who the credential acts as (sessions and API keys alike); ``rlmesh whoami`` reads it."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="The caller's identity and organization")
    def get(self, request):
        user = request.user
        subject = {"id": f"user_{user.pk}", "email": user.email or "", "displayName": user.get_full_name() or user.username} if user else {"id": "apikey", "email": "", "displayName": ""}
        is_session = isinstance(request.auth, SessionAuth)
        return Response(
            {
                "subject": subject,
                "organization": _organization_dict(self.organization),
                "role": request._request.role,
                "credential": "session" if is_session else "api_key",
                **({"session": request.auth.session.public_id} if is_session else {"apiKey": f"rlm_{request.auth.prefix}…"}),
            }
        )


class MyOrganizationsView(OrgScopedView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="The caller's organizations; `active` marks the current one")
    def get(self, request):
        if isinstance(request.auth, SessionAuth):
            memberships = Membership.objects.filter(user=request.user).select_related("organization").order_by("organization__name")
            items = [_organization_dict(m.organization, active=m.organization_id == self.organization.pk) | {"role": m.role} for m in memberships]
        else:  # an API key belongs to exactly one organization
            items = [_organization_dict(self.organization, active=True) | {"role": request._request.role}]
        return Response({"organizations": items})


class MySessionView(OrgScopedView):
    permission_classes: list = []

    @extend_schema(request=None, responses={204: None, **ERRORS}, summary="Sign out: revoke the session behind this access token (idempotent)")
    def delete(self, request):
        if request.auth is None:
            raise NotAuthenticated("authentication required")
        if not isinstance(request.auth, SessionAuth):
            raise ValidationError({"credential": ["an API key has no session; revoke the key under Settings"]})
        revoke_session(request.auth.session, reason="signed out")
        return Response(status=status.HTTP_204_NO_CONTENT)


# -------------------------------------------------------------- evaluations
class EvaluationPreviewView(OrgScopedView):
    read_only_post = True  # a preview writes nothing: viewers may size requests too

    @extend_schema(request=EvaluationRequestSerializer, responses={200: PreviewSerializer, **ERRORS}, summary="Validate and size a request without running it")
    def post(self, request):
        _, data = self.read_request_body()
        plan = plan_evaluation(data, organization=self.organization)
        return Response(
            {
                "valid": True,
                "warnings": plan.warnings,
                "workloads": plan.workload_summaries(),
                "estimates": plan.estimates(),
                "config": plan.config,
            }
        )


def _encode_cursor(evaluation: Evaluation) -> str:
    raw = json.dumps([evaluation.created_at.isoformat(), evaluation.pk]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple:
    try:
        created, pk = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        created_at = parse_datetime(created)
        if created_at is None or not isinstance(pk, int):
            raise ValueError
        return created_at, pk
    except (ValueError, TypeError, json.JSONDecodeError):
        raise ValidationError({"cursor": ["invalid cursor; pass the nextCursor of the previous page"]}) from None


def _limit(request, *, default: int, maximum: int) -> int:
    """``?limit=`` as an int clamped to [1, maximum] (the CLI may send 0); 400 if not an integer."""
    try:
        limit = int(request.query_params.get("limit", default))
    except ValueError:
        raise ValidationError({"limit": ["must be an integer"]}) from None
    return max(1, min(limit, maximum))


def _encode_position(pk: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([pk]).encode()).decode().rstrip("=")


def _decode_position(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        (pk,) = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(pk, int):
            raise ValueError
        return pk
    except (ValueError, TypeError):
        raise ValidationError({"cursor": ["invalid cursor; pass the nextCursor of the previous page"]}) from None


class EvaluationListView(OrgScopedView):
    MAX_LIMIT = 500

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, many=True, description="status; repeat to match any of several"),
            OpenApiParameter("q", str, description="case-insensitive substring of the name or evaluationLabel"),
            OpenApiParameter("tag", str, many=True, description="repeated key:value; all must match"),
            OpenApiParameter("limit", int, description="page size, 1–500 (default 25)"),
            OpenApiParameter("cursor", str, description="nextCursor of the previous page"),
        ],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="List evaluations, newest first",
        operation_id="evaluations_list",
    )
    def get(self, request):
        limit = _limit(request, default=25, maximum=self.MAX_LIMIT)
        filterset = EvaluationFilterSet(
            request.query_params, queryset=Evaluation.objects.for_org(self.organization).select_related("creator")
        )
        if not filterset.is_valid():
            raise ValidationError({k: list(v) for k, v in filterset.errors.items()})
        qs = filterset.qs.order_by("-created_at", "-id")
        cursor = request.query_params.get("cursor")
        if cursor:
            created_at, pk = _decode_cursor(cursor)
            qs = qs.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=pk))
        page = list(qs[: limit + 1])
        more = len(page) > limit
        page = page[:limit]
        return Response(
            {
                "items": EvaluationSerializer(page, many=True).data,
                "nextCursor": _encode_cursor(page[-1]) if more else None,
            }
        )

    @extend_schema(request=EvaluationRequestSerializer, responses={201: EvaluationSerializer, **ERRORS}, summary="Submit an evaluation")
    def post(self, request):
        raw, data = self.read_request_body()
        plan = plan_evaluation(data, organization=self.organization)
        evaluation = create_evaluation(
            plan=plan, raw_body=raw, organization=self.organization, creator=request.user,
            api_key=request.auth if isinstance(request.auth, ApiKey) else None,
        )
        return Response(EvaluationSerializer(evaluation).data, status=status.HTTP_201_CREATED)


def _detail_queryset():
    workloads = Workload.objects.select_related("model_version", "env_version").annotate(
        done=Count("episode_set"), errored=Count("episode_set", filter=Q(episode_set__status=EpisodeStatus.ERROR))
    )
    return Evaluation.objects.select_related("creator").prefetch_related(Prefetch("workloads", queryset=workloads))


class EvaluationDetailView(OrgScopedView):
    @extend_schema(responses={200: EvaluationDetailSerializer, **ERRORS}, summary="One evaluation with its request and effective config")
    def get(self, request, public_id: str):
        return Response(EvaluationDetailSerializer(self.get_evaluation(public_id, _detail_queryset())).data)


class CancellationView(OrgScopedView):
    @extend_schema(request=None, responses={202: EvaluationSerializer, 409: ErrorSerializer, **ERRORS}, summary="Cancel an evaluation")
    def post(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id)
        if not may_cancel(role=request._request.role, user=request.user, evaluation=evaluation):
            raise PermissionDenied(cancel_refusal(request._request.role))
        try:
            evaluation = cancel_evaluation(evaluation)
        except CancelRefused as exc:
            return error_response(409, "conflict", str(exc))
        return Response(EvaluationSerializer(evaluation).data, status=status.HTTP_202_ACCEPTED)


class ScoresView(OrgScopedView):
    @extend_schema(
        parameters=[OpenApiParameter("groupBy", str, enum=list(GROUP_FIELDS), description="default task")],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Success rates (95% Wilson interval) and mean rewards (95% t interval) per group",
    )
    def get(self, request, public_id: str):
        group_by = request.query_params.get("groupBy", "task")
        if group_by not in GROUP_FIELDS:
            raise ValidationError({"groupBy": [f"must be one of {', '.join(GROUP_FIELDS)}"]})
        return Response(evaluation_scores(self.get_evaluation(public_id), group_by))


class MetricsView(OrgScopedView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Throughput and latency rollups")
    def get(self, request, public_id: str):
        return Response(evaluation_metrics(self.get_evaluation(public_id)))


class EpisodeListView(OrgScopedView):
    MAX_LIMIT = 1000

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=["completed", "error"]),
            OpenApiParameter("limit", int, description="page size, 1–1000 (default 100)"),
            OpenApiParameter("cursor", str, description="nextCursor of the previous page"),
        ],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Episodes of an evaluation, by workload and index",
    )
    def get(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id)
        limit = _limit(request, default=100, maximum=self.MAX_LIMIT)
        after = _decode_position(request.query_params.get("cursor"))
        qs = evaluation.episodes.select_related("workload").order_by("pk").filter(pk__gt=after)
        status_filter = request.query_params.get("status")
        if status_filter:
            if status_filter not in EpisodeStatus.values:
                raise ValidationError({"status": [f"must be one of {', '.join(EpisodeStatus.values)}"]})
            qs = qs.filter(status=status_filter)
        page = list(qs[: limit + 1])
        more = len(page) > limit
        page = page[:limit]
        return Response({"items": [_episode_dict(e, evaluation.public_id) for e in page], "nextCursor": _encode_position(page[-1].pk) if more else None})


class LogListView(OrgScopedView):
    @extend_schema(
        parameters=[OpenApiParameter("limit", int, description="page size, 1–5000 (default 1000)"), OpenApiParameter("cursor", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Worker and runtime log lines, oldest first",
    )
    def get(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id)
        limit = _limit(request, default=1000, maximum=5000)
        after = _decode_position(request.query_params.get("cursor"))
        page = list(evaluation.logs.order_by("id").filter(pk__gt=after)[: limit + 1])
        more = len(page) > limit
        page = page[:limit]
        return Response(
            {
                "items": [
                    {"at": line.created_at, "level": line.level, "source": line.source, "message": line.message}
                    for line in page
                ],
                "nextCursor": _encode_position(page[-1].pk) if more else None,
            }
        )


class EpisodeVideoView(OrgScopedView):
    @extend_schema(
        responses={(200, "video/mp4"): OpenApiTypes.BINARY, (206, "video/mp4"): OpenApiTypes.BINARY, **ERRORS},
        summary="The episode's H.264 MP4 (when its task recorded it); honours Range requests",
    )
    def get(self, request, public_id: str, episode_id: int):
        return episode_video_response(request, self.get_evaluation(public_id), episode_id)


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
        "wallMs": e.wall_ms,
        "predictMs": e.predict_ms,
        "stepMs": e.step_ms,
        "startedAt": e.started_at,
        "finishedAt": e.finished_at,
    }


# ------------------------------------------------------------------- images
def _image_queryset(organization):
    return ImageRepository.objects.visible_to(organization).select_related("current_version").prefetch_related("versions")


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
    if parsed.digest:
        version = next((v for v in repo.versions.all() if v.digest == parsed.digest), None)
    elif parsed.tag:
        version = next((v for v in repo.versions.all() if parsed.tag in v.tags), None)
    else:
        version = repo.current_version
    return parsed, repo, version


class ImageListView(OrgScopedView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Images this organization may use", operation_id="images_list")
    def get(self, request):
        repos = _image_queryset(self.organization)
        kind = request.query_params.get("kind")
        if kind:
            if kind not in ("env", "model"):
                raise ValidationError({"kind": ["must be env or model"]})
            repos = repos.filter(kind=kind)
        return Response({"items": ImageSerializer(repos, many=True).data})


class ImageDetailView(OrgScopedView):
    @extend_schema(responses={200: ImageSerializer, **ERRORS}, summary="One image repository")
    def get(self, request, reference: str):
        parsed, repo, version = _find_image(reference, _image_queryset(self.organization))
        if version is None and not (parsed.digest or parsed.tag or parsed.checkpoint):
            return Response(ImageSerializer(repo).data)  # the repository exists; it has no current version
        if version is None or (parsed.checkpoint is not None and parsed.checkpoint not in version.checkpoints):
            raise NotFound(f"image {reference} not found")
        return Response(ImageSerializer(repo).data)

    @extend_schema(exclude=True)
    def delete(self, request, reference: str):
        raise ValidationError({"reference": ["name one version by digest: DELETE /v1/images/<namespace>/<repository>@sha256:…"]})


# ------------------------------------------------------------------ registry
class RegistryInfoView(OrgScopedView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Where to push images, and into which namespaces")
    def get(self, request):
        role = request._request.role
        if isinstance(request.auth, SessionAuth):
            namespaces = sorted(
                m.organization.slug for m in Membership.objects.filter(user=request.user).select_related("organization") if m.role in WRITE_ROLES
            )
        else:
            namespaces = [self.organization.slug] if role in WRITE_ROLES else []
        return Response({"host": settings.RLMESH_REGISTRY_HOST, "namespaces": namespaces})


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
