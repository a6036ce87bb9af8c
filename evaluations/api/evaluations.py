"""``/v1/evaluations``: submit, preview, list, read, cancel, and the scores and metrics of one evaluation."""

from __future__ import annotations

from datetime import datetime


from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from ..choices import EvaluationStatus, cancel_refusal, may_cancel
from ..domain.scoring import GROUP_FIELDS
from ..filtersets import EvaluationFilterSet
from ..models import ApiKey, Evaluation
from ..planning import live_warnings, plan_evaluation
from ..planning.schema import EvaluationRequestSerializer
from ..reports.regressions import attach_regressions
from ..reports.reproduction import with_references
from ..reports.scores import evaluation_metrics, evaluation_scores
from ..runs.lifecycle import CancelRefused, cancel_evaluation, create_evaluation
from ..selectors import evaluation_detail_queryset
from .base import OrgScopedView
from .baselines import TAG_PATTERN
from .exceptions import error_response
from .pagination import CURSOR_PATTERNS, newest_first_page, page_limit, query_value
from .throttles import charge_preview
from .serializers import (
    EvaluationDetailSerializer,
    EvaluationPageSerializer,
    EvaluationSerializer,
    MetricsSerializer,
    PreviewSerializer,
    ScoresSerializer,
    errors,
)

__all__ = ["CancellationView", "EvaluationDetailView", "EvaluationListView", "EvaluationPreviewView", "MetricsView",
           "ScoresView"]


#: An id of ``imports`` (or ending in ``/cancellations``) makes the path another route's, which takes POST only.
_OTHER_ROUTE_405 = ("The id is `imports` or ends in `/cancellations`: the path is then the import or cancellation "
                    "route, which takes POST only.")


class EvaluationPreviewView(OrgScopedView):
    read_only_post = True  # a preview writes nothing: viewers may size requests too

    @extend_schema(request=EvaluationRequestSerializer, responses={200: PreviewSerializer, **errors(400, 401, 413, 415, 429)}, summary="Validate and size a request without running it")
    def post(self, request):
        _, data = self.read_request_body()
        charge_preview(request, data)  # a per-credential budget of workloads previewed (api/throttles.py)
        plan = plan_evaluation(data, organization=self.organization)
        return Response(
            {
                "valid": True,
                "warnings": plan.warnings + plan.sample_size_warnings() + live_warnings(),
                "workloads": plan.workload_summaries(),
                "estimates": plan.estimates(),
                "config": plan.config,
            }
        )


class EvaluationListView(OrgScopedView):
    MAX_LIMIT = 500

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, many=True, enum=EvaluationStatus.values,
                             description="status; repeat to match any of several; another value → 400 on `status`"),
            OpenApiParameter("q", str, description="substring of the name or evaluationLabel, compared case-insensitively "
                                                   "by Unicode case folding (docs/using/search-and-filters.md)"),
            OpenApiParameter("tag", str, many=True, pattern=TAG_PATTERN,
                             description="repeated key:value; all must match; without `key:` → 400 on `tag`"),
            OpenApiParameter("model", str, description="a workload runs this model reference (exact)"),
            OpenApiParameter("env", str, description="a workload runs in this env reference (exact)"),
            OpenApiParameter("creator", str, description="the creator's username (exact)"),
            OpenApiParameter("limit", {"type": "integer", "minimum": 1}, description="page size: a whole number ≥ 1 (default 25); above 500 a page holds 500. 0, negative or not a number → 400 on `limit`"),
            OpenApiParameter("cursor", str, pattern=CURSOR_PATTERNS[datetime, int], description="nextCursor of the previous page"),
        ],
        responses={200: EvaluationPageSerializer, **errors(400, 401)},
        summary="List evaluations, newest first",
        operation_id="evaluations_list",
    )
    def get(self, request):
        limit = page_limit(request, default=25, maximum=self.MAX_LIMIT)
        filterset = EvaluationFilterSet(
            request.query_params,
            # A summary needs neither the request as received nor the effective config (both grow with workloads).
            queryset=Evaluation.objects.for_org(self.organization).select_related("creator")
            .defer("request_raw", "request", "config", "endpoint_key", "judge_key"),
        )
        if not filterset.is_valid():
            raise ValidationError({k: list(v) for k, v in filterset.errors.items()})
        page, next_cursor = newest_first_page(filterset.qs, request, limit)
        return Response({
            "items": EvaluationSerializer(page, many=True).data,
            "nextCursor": next_cursor,
        })

    @extend_schema(request=EvaluationRequestSerializer, responses={201: EvaluationSerializer, **errors(400, 401, 403, 413, 415)}, summary="Submit an evaluation")
    def post(self, request):
        raw, data = self.read_request_body()
        plan = plan_evaluation(data, organization=self.organization)
        evaluation = create_evaluation(
            plan=plan, raw_body=raw, organization=self.organization, creator=request.user,
            api_key=request.auth if isinstance(request.auth, ApiKey) else None,
        )
        body = EvaluationSerializer(evaluation).data
        body["warnings"] = [*body["warnings"], *live_warnings()]  # said now, not stored
        return Response(body, status=status.HTTP_201_CREATED)


class EvaluationDetailView(OrgScopedView):
    @extend_schema(responses={200: EvaluationDetailSerializer, **errors(401, 404, 405, _405=_OTHER_ROUTE_405)}, summary="One evaluation with its request and effective config")
    def get(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id, evaluation_detail_queryset())
        attach_regressions([evaluation], self.organization)  # no query unless it carries a tag
        return Response(EvaluationDetailSerializer(evaluation).data)


class CancellationView(OrgScopedView):
    @extend_schema(request=None, responses={202: EvaluationSerializer, **errors(401, 403, 404, 409, _409="The evaluation already finished.")}, summary="Cancel an evaluation",
                   description="The official clients send `{}`; the body is not read.")
    def post(self, request, public_id: str):
        evaluation = self.get_evaluation(public_id)
        if not may_cancel(role=self.role, user=request.user, evaluation=evaluation):
            raise PermissionDenied(cancel_refusal(self.role))
        try:
            evaluation = cancel_evaluation(evaluation)
        except CancelRefused as exc:
            return error_response(409, "conflict", str(exc))
        return Response(EvaluationSerializer(evaluation).data, status=status.HTTP_202_ACCEPTED)


class ScoresView(OrgScopedView):
    @extend_schema(
        parameters=[OpenApiParameter("groupBy", str, enum=list(GROUP_FIELDS), description="default task")],
        responses={200: ScoresSerializer, **errors(400, 401, 404)},
        summary="Success rates (95% Wilson interval) and mean rewards (95% t interval) per group",
        description="With `groupBy=benchmark`, each group also carries `reference` (an extension field): the model's "
                    "published success rate on that benchmark (`/v1/published-scores`), ours with its interval, and "
                    "the reproduction verdict: reproduced, below, above, or undecided with the episodes that would "
                    "decide; null when the model has no published number there.",
    )
    def get(self, request, public_id: str):
        group_by = query_value(request, "groupBy") or "task"
        if group_by not in GROUP_FIELDS:
            raise ValidationError({"groupBy": [f"must be one of {', '.join(GROUP_FIELDS)}"]})
        evaluation = self.get_evaluation(public_id)
        scores = evaluation_scores(evaluation, group_by)
        if group_by == "benchmark":  # published numbers are per model and benchmark
            with_references(scores["groups"], evaluation)
        return Response(scores)


class MetricsView(OrgScopedView):
    @extend_schema(responses={200: MetricsSerializer, **errors(401, 404)}, summary="Throughput and latency rollups")
    def get(self, request, public_id: str):
        return Response(evaluation_metrics(self.get_evaluation(public_id)))
