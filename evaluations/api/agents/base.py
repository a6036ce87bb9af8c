"""What the ``/agents`` views share: the caller's agent evaluations, found by run id or evaluation id (another
organization's, or one that is not an agent evaluation, is a 404)."""

from __future__ import annotations

import uuid

from rest_framework.exceptions import NotFound

from ...reports.agents import agent_evaluations
from ...models import Evaluation
from ..base import OrgScopedView

__all__ = ["AgentView"]


class AgentView(OrgScopedView):
    def get_run(self, run_id: str) -> Evaluation:
        """The organization's agent evaluation with this run id (UUID), else 404."""
        try:
            value = uuid.UUID(str(run_id))
        except ValueError:
            raise NotFound(f"run {run_id} not found") from None
        evaluation = agent_evaluations(self.organization).filter(run_id=value).first()
        if evaluation is None:
            raise NotFound(f"run {run_id} not found")
        return evaluation

    def get_agent_evaluation(self, evaluation_id: str) -> Evaluation:
        """By ``eval_…`` id (or a run id), else 404."""
        if not evaluation_id.startswith("eval_"):
            return self.get_run(evaluation_id)
        evaluation = agent_evaluations(self.organization).filter(public_id=evaluation_id).first()
        if evaluation is None:
            raise NotFound(f"evaluation {evaluation_id} not found")
        return evaluation
