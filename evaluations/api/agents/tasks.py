"""``GET /agents/evaluations/tasks``: every environment the organization may use that has tasks for agents."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from ...reports.agent_tasks import task_catalog
from .base import AgentView
from .serializers import TaskCatalogSerializer
from ..serializers import errors

__all__ = ["TaskCatalogView"]


class TaskCatalogView(AgentView):
    @extend_schema(responses={200: TaskCatalogSerializer, **errors(401)}, summary="Tasks for agents, by environment",
                   operation_id="agents_tasks")
    def get(self, request):
        return Response(TaskCatalogSerializer(task_catalog(self.organization)).data)
