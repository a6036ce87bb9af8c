"""Agent runs in the dashboard: the run's usage, latency and webhook deliveries on its Overview, a rollout's
transcript step by step (with the screenshots that were sent), and the organization's webhook secret in Settings."""

from __future__ import annotations

import json
import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST, require_safe

from .. import webhooks
from ..media import file_response
from ..reports.agents import agent_summary, agent_usage, episode_verdict, evaluation_results, rollout_id
from ..choices import ADMIN_ROLES
from ..models import Evaluation
from ..runs.transcripts import is_agent_workload
from ..tenancy import active_membership, org_evaluation, role_required

__all__ = ["agent_overview", "episode_transcript", "transcript_screenshot", "webhook_secret_rotate"]

_SHOT = re.compile(r"^step-\d{3}\.png$")


def agent_overview(evaluation: Evaluation) -> dict:
    """The Overview's agent block: outcome counts (endpoint failures apart), success rate, pass@k / pass^k, usage
    and endpoint time per run and task, and the webhook delivery log (empty for an evaluation that is neither on an
    agent env nor has a webhook)."""
    # Decided from the prefetched workloads: other evaluations' pages pay no query for this.
    if not evaluation.webhook_url and not any(is_agent_workload(w) for w in evaluation.workloads.all()):
        return {}
    results = evaluation_results(evaluation)
    usage = agent_usage(results)
    # Outcome counts as soon as any rollout has a result (a cancelled run's unrun rollouts too); usage once one ran.
    return {"agent_usage": usage if usage["rollouts"] else None,
            "agent_summary": agent_summary(results) if results else None,
            "webhook_url": evaluation.webhook_url, "deliveries": list(evaluation.webhook_deliveries.all())}


def _transcript(evaluation: Evaluation, episode_id: int):
    episode = evaluation.episodes.filter(pk=episode_id).exclude(transcript="").select_related("workload").first()
    if episode is None:
        raise Http404("this episode has no transcript")
    try:
        with default_storage.open(episode.transcript.name, "rb") as fh:
            return episode, json.load(fh)
    except FileNotFoundError:
        raise Http404("the transcript file is missing from storage") from None


def _steps(events: list[dict]) -> list[dict]:
    """The events grouped per step: ``{"step", "observation", "model", "tool", "errors", "score"}``."""
    steps: dict[int, dict] = {}
    for event in events:
        step = steps.setdefault(event.get("step", 0), {"step": event.get("step", 0), "errors": []})
        kind = event.get("type")
        if kind == "error":
            step["errors"].append(event)
        elif kind in ("observation", "model", "tool", "score", "reset", "judge"):
            step[kind] = event
    for step in steps.values():
        model = step.get("model") or {}
        request = model.get("request")
        step["request_json"] = json.dumps(request, indent=2, ensure_ascii=False) if request is not None else ""
        step["reply_json"] = json.dumps(model.get("reply"), indent=2, ensure_ascii=False) if model else ""
        tool = step.get("tool") or {}
        step["arguments_json"] = json.dumps(tool.get("arguments"), ensure_ascii=False) if tool else ""
    return [steps[k] for k in sorted(steps)]


@login_required
@require_GET
def episode_transcript(request: HttpRequest, public_id: str, episode_id: int) -> HttpResponse:
    """A rollout's transcript, step by step."""
    evaluation = org_evaluation(request, public_id, Evaluation.objects.all())
    episode, document = _transcript(evaluation, episode_id)
    events = document.get("events") or []
    score = next((e for e in reversed(events) if e.get("type") == "score"), {})
    context = {"evaluation": evaluation, "episode": episode, "document": document, "summary": document.get("summary")
               or {}, "steps": _steps(events), "final_state": score.get("finalState"),
               "rollout_id": rollout_id(evaluation.run_id, episode.workload.index, episode.index),
               "verdict": episode_verdict(episode)}
    return render(request, "evaluations/episode_transcript.html", context)


@login_required
@require_safe
def transcript_screenshot(request: HttpRequest, public_id: str, episode_id: int, name: str) -> HttpResponse:
    """A screenshot that was sent to the agent (a PNG stored beside the transcript)."""
    evaluation = org_evaluation(request, public_id, Evaluation.objects.all())
    episode = evaluation.episodes.filter(pk=episode_id).exclude(transcript="").first()
    if episode is None or not _SHOT.match(name):
        raise Http404("no such screenshot")
    path = f"{episode.transcript.name.removesuffix('.json')}/{name}"
    try:
        return file_response(request, default_storage.open(path, "rb"), content_type="image/png")
    except FileNotFoundError:
        raise Http404("no such screenshot") from None


@login_required
@require_POST
@role_required(ADMIN_ROLES, "only owners and admins rotate the webhook secret")
def webhook_secret_rotate(request: HttpRequest) -> HttpResponse:
    webhooks.rotate_secret(active_membership(request).organization)
    messages.info(request, "Webhook secret rotated: deliveries from now on are signed with the new secret.")
    return redirect("evaluations:settings")


def webhook_settings(membership) -> dict:
    """Settings' webhook block: the secret (made on first view) for owners and admins."""
    if membership.role not in ADMIN_ROLES:
        return {"webhook_secret": None}
    return {"webhook_secret": webhooks.webhook_secret(membership.organization)}
