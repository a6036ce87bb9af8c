"""The task catalog for agents, read from the current env versions the organization may use: what
``GET /agents/evaluations/tasks`` returns and the dashboard's agent launch form picks from."""

from __future__ import annotations

from .agents import agent_env_versions
from ..models import ImageRepository

__all__ = ["task_catalog"]


def _env_id(repo: ImageRepository) -> str:
    return repo.name if repo.namespace == "prebuilt" else repo.path


def _open_runs(scenario: dict | None) -> dict | None:
    """What ``POST /agents/runs/open`` accepts on this env (null: no open runs)."""
    if scenario is None:
        return None
    spec = scenario["open"]
    return {"profiles": list(spec.get("profiles") or []), "default_profile": spec.get("defaultProfile"),
            "verifier_vocabulary": spec.get("vocabulary"), "default_max_steps": scenario.get("maxSteps")}


def task_catalog(organization) -> dict:
    """``{"environments": [{"env_id", "reference", "description", "tasks": [...], "open_runs"}]}``."""
    versions = set(agent_env_versions(organization))
    repos = ImageRepository.objects.visible_to(organization).filter(current_version_id__in=versions) \
        .select_related("current_version").order_by("namespace", "name")
    environments = []
    for repo in repos:
        scenarios = [s for s in repo.current_version.scenarios if isinstance(s, dict) and s.get("tools")]
        # Open-run tasks (``open``) take a task_definition: POST /agents/runs/open, not a catalog id.
        tasks = [{"task_id": s["id"], "name": s.get("name") or s["id"], "goal": s.get("instruction") or "",
                  "description": s.get("description") or "", "max_steps": s.get("maxSteps"),
                  "tools": list(s["tools"]), "profile_id": s.get("profileId"), "verifiers": s.get("verifiers")}
                 for s in scenarios if not s.get("open")]
        opened = next((s for s in scenarios if s.get("open")), None)
        environments.append({"env_id": _env_id(repo), "reference": repo.path, "description": repo.description,
                             "tasks": tasks, "open_runs": _open_runs(opened)})
    return {"environments": environments}
