"""``GET /agents/evaluations/tasks``: every environment the organization may use that has tasks for agents."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from ...agent_reports import agent_env_versions
from ...models import ImageRepository
from .base import AgentView
from .serializers import TaskCatalogSerializer
from ..serializers import errors

__all__ = ["TaskCatalogView"]


def _env_id(repo: ImageRepository) -> str:
    return repo.name if repo.namespace == "prebuilt" else repo.path


def catalog(organization) -> dict:
    """``{"environments": [{"env_id", "reference", "description", "tasks": [...]}]}`` from the current versions."""
    versions = set(agent_env_versions(organization))
    repos = ImageRepository.objects.visible_to(organization).filter(current_version_id__in=versions) \
        .select_related("current_version").order_by("namespace", "name")
    environments = []
    for repo in repos:
        tasks = [{"task_id": s["id"], "name": s.get("name") or s["id"], "goal": s.get("instruction") or "",
                  "description": s.get("description") or "", "max_steps": s.get("maxSteps"),
                  "tools": list(s["tools"])}
                 for s in repo.current_version.scenarios if isinstance(s, dict) and s.get("tools")]
        environments.append({"env_id": _env_id(repo), "reference": repo.path, "description": repo.description,
                             "tasks": tasks})
    return {"environments": environments}


class TaskCatalogView(AgentView):
    @extend_schema(responses={200: TaskCatalogSerializer, **errors(401)}, summary="Tasks for agents, by environment",
                   operation_id="agents_tasks")
    def get(self, request):
        return Response(TaskCatalogSerializer(catalog(self.organization)).data)
