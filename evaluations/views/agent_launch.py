"""The agent launch page: start an agent run (catalog tasks) or an open run (a free-text task) from a form, with
the same planning and checks as ``POST /agents/evaluations/run`` and ``POST /agents/runs/open``.

Two plain forms on one page (no script needed); the endpoint's and the judge's keys are password fields that are
never rendered back. A refused submission shows every problem with its JSON path.
"""

from __future__ import annotations

import json

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from ..reports.agent_tasks import task_catalog
from ..choices import WRITE_ROLES
from ..planning import RequestInvalid, parse_request_body
from ..planning.agent_runs import plan_agent_run
from ..planning.open_runs import plan_open_run
from ..runs.lifecycle import create_evaluation
from ..tenancy import active_membership, active_organization

__all__ = ["agent_run_new"]


class EndpointForm(forms.Form):
    """Where the agent is served (the seed's ``endpoint``) and where the webhook goes."""

    url = forms.CharField(label="Endpoint URL", max_length=2048)
    key = forms.CharField(label="Endpoint key", required=False, widget=forms.PasswordInput(render_value=False),
                          help_text="sent as Authorization: Bearer; stored encrypted, never shown again")
    endpoint_model = forms.CharField(label="Chat model", required=False, max_length=300)
    use_openai_chat = forms.BooleanField(label="OpenAI-compatible chat (else the HTTP agent protocol)",
                                         required=False, initial=True)
    use_wrapper = forms.BooleanField(label="Message contract (else the raw observation JSON)", required=False,
                                     initial=True)
    send_tool_definitions = forms.BooleanField(label="Send tool definitions", required=False, initial=True)
    screenshots = forms.BooleanField(label="Send screenshots", required=False)
    additional_params = forms.CharField(label="additional_params (JSON object)", required=False,
                                        widget=forms.Textarea(attrs={"rows": 2}))
    webhook_url = forms.CharField(label="Webhook URL", required=False, max_length=2048)

    def endpoint(self) -> dict:
        d = self.cleaned_data
        params = _json_or_text(d.get("additional_params"))
        return {"url": d["url"], "key": d.get("key") or None, "model": d.get("endpoint_model") or None,
                "use_openai_chat": d["use_openai_chat"], "use_wrapper": d["use_wrapper"],
                "send_tool_definitions": d["send_tool_definitions"],
                "minimal_observation": False if d["screenshots"] else None, "additional_params": params}


class CatalogRunForm(EndpointForm):
    model = forms.CharField(label="Agent label", max_length=200, initial="my-agent")
    env_id = forms.ChoiceField(label="Environment")
    task_ids = forms.MultipleChoiceField(label="Tasks", widget=forms.SelectMultiple(attrs={"size": 12}))
    rollouts_per_example = forms.IntegerField(label="Rollouts per task", min_value=1, initial=1)
    max_steps = forms.IntegerField(label="Max steps (blank: each task's)", required=False, min_value=1)

    def request(self) -> dict:
        d = self.cleaned_data
        return {"env_id": d["env_id"], "model": d["model"], "task_ids": list(d["task_ids"]),
                "rollouts_per_example": d["rollouts_per_example"], "max_steps": d.get("max_steps"),
                "webhook_url": d.get("webhook_url") or None, "endpoint": self.endpoint()}


class OpenRunForm(EndpointForm):
    model = forms.CharField(label="Agent label", max_length=200, required=False)
    env_id = forms.ChoiceField(label="Environment")
    task_definition = forms.CharField(label="Task", max_length=2000, widget=forms.Textarea(attrs={"rows": 3}))
    profile_id = forms.ChoiceField(label="Signed-in user")
    max_steps = forms.IntegerField(label="Max steps", min_value=1, max_value=1000, initial=20)
    rollouts = forms.IntegerField(label="Rollouts", min_value=1, max_value=100, initial=1)
    verifiers = forms.CharField(label="Verifiers (JSON list, shop.state.v1; optional)", required=False,
                                widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}))
    judge_url = forms.CharField(label="Judge URL (OpenAI-compatible; optional)", required=False, max_length=2048)
    judge_key = forms.CharField(label="Judge key", required=False, widget=forms.PasswordInput(render_value=False))
    judge_model = forms.CharField(label="Judge model", required=False, max_length=300)

    def request(self) -> dict:
        d = self.cleaned_data
        body = {"env_id": d["env_id"], "task_definition": d["task_definition"], "profile_id": d["profile_id"],
                "max_steps": d["max_steps"], "rollouts": d["rollouts"], "webhook_url": d.get("webhook_url") or None,
                "endpoint": self.endpoint()}
        if d.get("model"):
            body["model"] = d["model"]
        if (d.get("verifiers") or "").strip():
            body["verifiers"] = _json_or_text(d["verifiers"])
        if d.get("judge_url"):
            body["judge"] = {"url": d["judge_url"], "key": d.get("judge_key") or None,
                             "model": d.get("judge_model") or None}
        return body


def _json_or_text(text: str | None):
    """Parsed JSON, or the text itself (the planner then says what is wrong with it, with its path)."""
    if not (text or "").strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _forms(catalog: dict, data=None, mode: str = "") -> tuple[CatalogRunForm, OpenRunForm]:
    envs = catalog["environments"]
    run_form = CatalogRunForm(data if mode == "run" else None, prefix="run")
    open_form = OpenRunForm(data if mode == "open" else None, prefix="open")
    run_form.fields["env_id"].choices = [(e["env_id"], e["env_id"]) for e in envs]
    run_form.fields["task_ids"].choices = [
        (e["env_id"], [(t["task_id"], f"{t['task_id']} — {t['goal'][:90]}") for t in e["tasks"]]) for e in envs]
    opened = [e for e in envs if e["open_runs"]]
    open_form.fields["env_id"].choices = [(e["env_id"], e["env_id"]) for e in opened]
    profiles = sorted({p for e in opened for p in e["open_runs"]["profiles"]})
    open_form.fields["profile_id"].choices = [(p, p) for p in profiles]
    return run_form, open_form


def _submit(request: HttpRequest, form, mode: str, org) -> tuple[HttpResponse | None, list[dict]]:
    if not form.is_valid():
        return None, [{"path": name, "message": " ".join(errs)} for name, errs in form.errors.items()]
    plan_run = plan_agent_run if mode == "run" else plan_open_run
    try:
        # Through the API's parser too: the same refusals (NUL characters, nesting) as a request body.
        plan = plan_run(parse_request_body(json.dumps(form.request()).encode()), organization=org)
    except RequestInvalid as exc:
        return None, exc.errors
    raw = json.dumps(plan.data, ensure_ascii=False, indent=2)  # keys already replaced by ***
    evaluation = create_evaluation(plan=plan, raw_body=raw, organization=org, creator=request.user)
    return redirect(evaluation.get_absolute_url()), []


@login_required
def agent_run_new(request: HttpRequest) -> HttpResponse:
    """The page (GET) and both submissions (POST with ``mode`` ``run`` or ``open``)."""
    org = active_organization(request)
    can_write = active_membership(request).role in WRITE_ROLES
    catalog = task_catalog(org)
    mode = request.POST.get("mode", "") if request.method == "POST" else ""
    run_form, open_form = _forms(catalog, request.POST if mode else None, mode)
    errors: list[dict] = []
    if mode in ("run", "open"):
        if not can_write:
            return HttpResponse("your role cannot launch evaluations", status=403)
        response, errors = _submit(request, run_form if mode == "run" else open_form, mode, org)
        if response is not None:
            return response
    context = {"run_form": run_form, "open_form": open_form, "errors": errors, "mode": mode, "can_write": can_write,
               "environments": catalog["environments"]}
    return render(request, "evaluations/agent_run_new.html", context, status=400 if errors else 200)
