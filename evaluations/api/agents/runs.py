"""``/agents/evaluations/run``: submit a run, read its status, cancel it, and read one rollout's transcript;
``/agents/runs/open``: submit an open run (a free-text task)."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.files.storage import default_storage
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response

from ...reports.agents import STATUS_WORDS, find_rollout, status_document
from ...choices import cancel_refusal, may_cancel
from ...models import ApiKey
from ...planning import live_warnings, parse_request_body
from ...planning.agent_runs import plan_agent_run
from ...planning.agent_schema import AgentRunRequestSerializer
from ...planning.open_runs import OpenRunRequestSerializer, plan_open_run
from ...runs.lifecycle import CancelRefused, cancel_evaluation, create_evaluation
from ..exceptions import error_response
from ..parsers import check_size
from ..serializers import errors
from .base import AgentView
from .serializers import RunCreatedSerializer, StatusDocumentSerializer, TranscriptSerializer

__all__ = ["OpenRunView", "RunCancelView", "RunCreateView", "RunStatusView", "TranscriptView"]

MESSAGE = "Evaluation started. Poll status_url for progress and results."


def status_url(run_id) -> str:
    """Relative to the API's base (``$PUBLIC_URL/agents``), as in the seed."""
    return f"/evaluations/run/{run_id}/status"


def _created(request, organization, plan) -> Response:
    """Write the planned run and answer 201 with where to poll it."""
    raw = json.dumps(plan.data, ensure_ascii=False, indent=2)  # the plan's stored request: keys already ***
    evaluation = create_evaluation(plan=plan, raw_body=raw, organization=organization, creator=request.user,
                                   api_key=request.auth if isinstance(request.auth, ApiKey) else None)
    body = {"run_id": evaluation.run_id, "status": STATUS_WORDS[evaluation.status],
            "status_url": status_url(evaluation.run_id), "message": MESSAGE,
            "evaluation_id": evaluation.public_id, "warnings": plan.warnings + live_warnings(),
            "dashboard_url": f"{settings.PUBLIC_URL}{evaluation.get_absolute_url()}"}
    return Response(RunCreatedSerializer(body).data, status=status.HTTP_201_CREATED,
                    headers={"Location": f"{settings.PUBLIC_URL}/agents{status_url(evaluation.run_id)}"})


class RunCreateView(AgentView):
    @extend_schema(request=AgentRunRequestSerializer,
                   responses={201: RunCreatedSerializer, **errors(400, 401, 403, 413)},
                   summary="Start a run of an agent served at an endpoint", operation_id="agents_run_create")
    def post(self, request):
        check_size(request)
        data = parse_request_body(request._request.body)
        plan = plan_agent_run(data, organization=self.organization)
        return _created(request, self.organization, plan)


class RunStatusView(AgentView):
    @extend_schema(responses={200: StatusDocumentSerializer, **errors(401, 404)}, summary="A run's status and results",
                   operation_id="agents_run_status")
    def get(self, request, run_id: str):
        return Response(StatusDocumentSerializer(status_document(self.get_run(run_id))).data)


class RunCancelView(AgentView):
    @extend_schema(request=None, responses={202: StatusDocumentSerializer, **errors(401, 403, 404, 409)},
                   summary="Cancel a run (finished rollouts are kept)", operation_id="agents_run_cancel")
    def delete(self, request, run_id: str):
        evaluation = self.get_run(run_id)
        if not may_cancel(role=self.role, user=request.user, evaluation=evaluation):
            raise PermissionDenied(cancel_refusal(self.role))
        try:
            evaluation = cancel_evaluation(evaluation)
        except CancelRefused as exc:
            return error_response(409, "conflict", f"run {evaluation.run_id} cannot be cancelled: {exc}")
        return Response(StatusDocumentSerializer(status_document(evaluation)).data, status=status.HTTP_202_ACCEPTED)


class TranscriptView(AgentView):
    @extend_schema(responses={200: TranscriptSerializer, **errors(401, 404)}, summary="One rollout's transcript",
                   operation_id="agents_run_transcript")
    def get(self, request, run_id: str, rollout_id: str):
        episode = find_rollout(self.get_run(run_id), rollout_id)
        if episode is None or not episode.transcript:
            raise NotFound(f"rollout {rollout_id} has no transcript")
        try:
            with default_storage.open(episode.transcript.name, "rb") as fh:
                document = json.load(fh)
        except FileNotFoundError:
            raise NotFound("the transcript file is missing from storage") from None
        return Response(TranscriptSerializer(document).data)


class OpenRunView(AgentView):
    @extend_schema(request=OpenRunRequestSerializer,
                   responses={201: RunCreatedSerializer, **errors(400, 401, 403, 413)}, operation_id="agents_runs_open",
                   summary="Start an open run: the agent on a free-text task, judged by verifiers, a judge or none")
    def post(self, request):
        check_size(request)
        data = parse_request_body(request._request.body)
        plan = plan_open_run(data, organization=self.organization)
        return _created(request, self.organization, plan)
