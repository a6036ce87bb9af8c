"""Dashboard forms. Validation of a request is never done here: the form only builds the request JSON,
and :func:`evaluations.planning.plan_evaluation` validates it exactly as the API does."""

from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError

from .domain.text import display_text_problem

from .choices import ProbeStatus, Role
from .models import ImageRepository, Organization

EPISODE_SORTS = {
    "index": ("workload__index", "index"),
    "-reward": ("-reward", "workload__index", "index"),
    "reward": ("reward", "workload__index", "index"),
    "-steps": ("-steps", "workload__index", "index"),
    "steps": ("steps", "workload__index", "index"),
    "-wall": ("-wall_ms", "workload__index", "index"),
}


def catalog_choices(organization: Organization) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, list[dict]]]:
    """(model choices, env choices, scenarios by env reference) from the images the organization may use.

    A model repository with checkpoints contributes one choice per checkpoint (``ns/repo/checkpoint``).
    """
    models, envs, scenarios = [], [], {}
    repos = ImageRepository.objects.visible_to(organization).select_related("current_version")
    for repo in repos:
        version = repo.current_version
        if version is None or version.probe_status != ProbeStatus.PASSED:
            continue
        if repo.kind == "model":
            if version.checkpoints:
                models += [(f"{repo.path}/{c}", f"{repo.path}/{c}") for c in version.checkpoints]
            else:
                models.append((repo.path, repo.path))
        else:
            envs.append((repo.path, repo.path))
            scenarios[repo.path] = version.scenarios
    return models, envs, scenarios


def validate_display_text(value: str) -> None:
    """Form validator: names and labels hold printable text (see domain.text.display_text_problem)."""
    problem = display_text_problem(value or "")
    if problem:
        raise ValidationError(problem)


class LaunchForm(forms.Form):
    """The launch form's fields; ``request_json`` (kept in sync by static/js/app.js) is what is submitted."""

    name = forms.CharField(required=False, max_length=200, validators=[validate_display_text])
    models = forms.MultipleChoiceField(required=False, widget=forms.SelectMultiple(attrs={"size": 5}))
    env = forms.ChoiceField(required=False)
    task_id = forms.CharField(required=False, label="Task / scenario")
    episodes = forms.IntegerField(required=False, min_value=1, initial=10)
    seed = forms.IntegerField(required=False, min_value=0, initial=0)
    workers = forms.IntegerField(required=False, min_value=1, initial=1)
    max_steps = forms.IntegerField(required=False, min_value=1, label="Max steps")
    tags = forms.CharField(required=False, help_text="key:value, comma-separated")
    env_vars = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), label="envVars",
                               help_text="KEY=value, one per line; set on every model's server")
    request_json = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false"}),
                                   label="Raw request (JSON)")

    def __init__(self, *args, organization: Organization, **kwargs):
        super().__init__(*args, **kwargs)
        models, envs, self.scenarios = catalog_choices(organization)
        self.fields["models"].choices = models
        self.fields["env"].choices = [("", "—")] + envs

    def build_request(self) -> str:
        """The request JSON text: ``request_json`` verbatim when given, else built from the fields."""
        data = self.cleaned_data
        if data.get("request_json", "").strip():
            return data["request_json"]
        env_vars = {}
        for line in (data.get("env_vars") or "").splitlines():
            if line.strip():
                key, _, value = line.partition("=")
                env_vars[key.strip()] = value
        task = {"env": data.get("env") or "", "taskId": data.get("task_id") or "", "episodes": data.get("episodes") or 10,
                "seed": data.get("seed") or 0}
        if data.get("workers") and data["workers"] > 1:
            task["workers"] = data["workers"]
        if data.get("max_steps"):
            task["maxSteps"] = data["max_steps"]
        body: dict = {}
        if data.get("name"):
            body["name"] = data["name"]
        body["models"] = [{"model": m, **({"envVars": env_vars} if env_vars else {})} for m in data.get("models") or []]
        body["tasks"] = [task]
        tags = {}
        for pair in (data.get("tags") or "").split(","):
            if pair.strip():
                key, _, value = pair.strip().partition(":")
                tags[key.strip()] = value.strip()
        if tags:
            body["tags"] = tags
        return json.dumps(body, indent=2)


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[validate_display_text])
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)
    expires_in_days = forms.IntegerField(required=False, min_value=1, max_value=3650, label="Expires in (days)")


class ImportForm(forms.Form):
    bundle = forms.FileField(
        label="Bundle (.zip)",
        help_text="the .zip that rlmesh.Recorder.export() wrote: result.json plus media/",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,application/zip"}),
    )
    name = forms.CharField(max_length=200, required=False, validators=[validate_display_text],
                           help_text="optional; default: Import of <file name>")
