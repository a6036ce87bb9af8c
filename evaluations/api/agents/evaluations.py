"""``GET /agents/evaluations`` (cursor-paginated, newest first, ``?environment_id=``) and
``GET /agents/evaluations/{evaluation_id}`` (the status document)."""

from __future__ import annotations

from datetime import datetime


from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from ...reports.agents import STATUS_WORDS, agent_evaluations, env_id_of, status_document
from ...planning.agent_runs import agent_env_reference
from ...services.image_versions import REFERENCE_PATTERN, ReferenceError_, parse_reference
from ..pagination import CURSOR_PATTERNS, newest_first_page, page_limit, query_value
from .base import AgentView
from .runs import status_url
from .serializers import AgentEvaluationListSerializer, StatusDocumentSerializer
from ..serializers import errors

__all__ = ["AgentEvaluationDetailView", "AgentEvaluationListView"]

#: A prebuilt env's bare name (``miniwob``) or an env reference.
ENV_ID_PATTERN = rf"^(?:[a-z0-9][a-z0-9._-]*|{REFERENCE_PATTERN[1:-1]})$"


def _iso(value):
    return value.isoformat().replace("+00:00", "Z") if value else None


def summary(evaluation) -> dict:
    workloads = list(evaluation.workloads.all())
    agent = evaluation.config.get("agent") or {}
    return {
        "run_id": evaluation.run_id, "evaluation_id": evaluation.public_id,
        "status": STATUS_WORDS[evaluation.status], "env_id": env_id_of(evaluation, workloads),
        "model": agent.get("model") or (", ".join(sorted({w.model_ref for w in workloads})) or None),
        "progress": {"completed_rollouts": evaluation.completed_episodes, "total_rollouts": evaluation.total_episodes,
                     "current_episode_id": None, "current_task_id": None},
        "created_at": _iso(evaluation.created_at), "started_at": _iso(evaluation.started_at),
        "completed_at": _iso(evaluation.finished_at), "status_url": status_url(evaluation.run_id),
    }


class AgentEvaluationListView(AgentView):
    MAX_LIMIT = 500

    @extend_schema(
        parameters=[OpenApiParameter("environment_id", str, pattern=ENV_ID_PATTERN, description="e.g. miniwob or prebuilt/miniwob; not a name or reference → 400"),
                    OpenApiParameter("limit", {"type": "integer", "minimum": 1}, description="page size ≥ 1 (default 20; above 500 a page holds 500); 0, negative or not a number → 400"),
                    OpenApiParameter("cursor", str, pattern=CURSOR_PATTERNS[datetime, int], description="next_cursor of the previous page")],
        responses={200: AgentEvaluationListSerializer, **errors(400, 401)}, summary="Agent evaluations, newest first",
        operation_id="agents_evaluations_list")
    def get(self, request):
        limit = page_limit(request, default=20, maximum=self.MAX_LIMIT)
        qs = agent_evaluations(self.organization).prefetch_related("workloads")
        env_id = query_value(request, "environment_id")
        if env_id:
            try:
                ref = parse_reference(agent_env_reference(env_id))
            except ReferenceError_ as exc:
                raise ValidationError({"environment_id": [str(exc)]}) from None
            qs = qs.filter(workloads__env_version__repository__namespace=ref.namespace,
                           workloads__env_version__repository__name=ref.repository)
        page, next_cursor = newest_first_page(qs, request, limit, cursor_field="next_cursor")
        body = {"items": [summary(e) for e in page],
                "next_cursor": next_cursor}
        return Response(AgentEvaluationListSerializer(body).data)


#: An agent evaluation's id: its ``eval_…`` id or its run id (a UUID). Other words under /agents/evaluations/ name
#: other routes (``run``, ``tasks``), so the schema states the form instead of "any string".
EVALUATION_ID_PATTERN = r"^(eval_[0-9a-f]{16}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$"


class AgentEvaluationDetailView(AgentView):
    @extend_schema(responses={200: StatusDocumentSerializer, **errors(401, 404, 405, _405="The id names another route "
                                                                       "(`run` takes POST only).")},
                   summary="One agent evaluation (its status)", operation_id="agents_evaluation_detail",
                   parameters=[OpenApiParameter("evaluation_id", str, OpenApiParameter.PATH, pattern=EVALUATION_ID_PATTERN,
                                                description="the run's eval_… id or its run id (a UUID)")])
    def get(self, request, evaluation_id: str):
        return Response(StatusDocumentSerializer(status_document(self.get_agent_evaluation(evaluation_id))).data)
