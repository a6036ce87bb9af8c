"""Dashboard forms. Validation of a request is never done here: the form only builds the request JSON,
and :func:`evaluations.planning.plan_evaluation` validates it exactly as the API does."""

from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError

from .choices import ProbeStatus, Role
from .domain import perturbations
from .domain.outcomes import criterion_summary
from .domain.text import display_text_problem
from .models import ImageRepository, Organization
from .prebuilt.catalog import AGENT_ENDPOINT_MODEL

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
    for repo in _usable_repositories(organization):
        version = repo.current_version
        if repo.kind == "model":
            if repo.path == AGENT_ENDPOINT_MODEL:  # configured only by /agents runs
                continue
            if version.checkpoints:
                models += [(f"{repo.path}/{c}", f"{repo.path}/{c}") for c in version.checkpoints]
            else:
                models.append((repo.path, repo.path))
        else:
            envs.append((repo.path, repo.path))
            scenarios[repo.path] = version.scenarios
    return models, envs, scenarios


def _usable_repositories(organization: Organization) -> list[ImageRepository]:
    repos = ImageRepository.objects.visible_to(organization).select_related("current_version")
    return [r for r in repos if r.current_version is not None and r.current_version.probe_status == ProbeStatus.PASSED]


def param_widgets(version) -> list[dict]:
    """The make parameters a task may set on an env version, for the form's widgets: the ``rlmesh.ParamSpec`` its
    describe envelope recorded (name, type, choices, default, description; a ``range``/``minimum``/``maximum`` when the
    spec declares one), minus those a scenario fixes and ``physics``/``perturbation`` (set by a task's perturbation)."""
    spec = ((version.describe or {}).get("params") or {}).get("param_spec") or {}
    fixed = {k for s in version.scenarios for k in (s.get("params") or {})} | {"physics", "perturbation"}
    widgets = []
    for p in spec.get("params") or []:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or p["name"] in fixed:
            continue
        low, high = (p.get("range") or [None, None])[:2] if isinstance(p.get("range"), list) else (p.get("minimum"), p.get("maximum"))
        widgets.append({"name": p["name"], "type": p.get("type") or "str", "choices": list(p.get("choices") or []),
                        "default": p.get("default"), "description": p.get("description") or "", "min": low, "max": high})
    return widgets


def env_catalogs(organization: Organization) -> list[dict]:
    """Per usable env: its scenario catalog (id, name, benchmark, instruction, what success means), its benchmarks in catalog order
    with their size, and its parameter widgets. What the launch form's scenario picker and params render."""
    out = []
    for repo in _usable_repositories(organization):
        if repo.kind != "env":
            continue
        version = repo.current_version
        scenarios = [{"id": s["id"], "name": s.get("name") or s["id"], "benchmark": s["id"].split("/", 1)[0] if "/" in s["id"] else "",
                      "instruction": s.get("instruction") or "",
                      "success": criterion_summary(s.get("success")) if s.get("success") else None}
                     for s in version.scenarios]
        benchmarks: dict[str, int] = {}
        for s in scenarios:
            if s["benchmark"]:
                benchmarks[s["benchmark"]] = benchmarks.get(s["benchmark"], 0) + 1
        out.append({"env": repo.path, "scenarios": scenarios, "params": param_widgets(version),
                    "benchmarks": [{"id": b, "count": n} for b, n in benchmarks.items()]})
    return out


def validate_display_text(value: str) -> None:
    """Form validator: names and labels hold printable text (see domain.text.display_text_problem)."""
    problem = display_text_problem(value or "")
    if problem:
        raise ValidationError(problem)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _items(text: str) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _pairs(value: str, split, separator: str, rule: str) -> str:
    """``value`` unchanged when each of its entries (``split(value)``) has a non-empty name before ``separator``;
    else a ValidationError naming the malformed ones (never dropped silently)."""
    bad = [entry for entry in split(value) if entry.find(separator) < 1]
    if bad:
        raise forms.ValidationError(f"{rule} (not {', '.join(json.dumps(b) for b in bad)})")
    return value


_NUMERIC = {"inputmode": "numeric", "autocomplete": "off"}
RECORD_CHOICES = [("none", "no videos"), ("all", "every episode"), ("failures", "failed episodes"), ("first", "the first N episodes")]
SUCCESS_CHOICES = [("", "as the env declares it"), ("survived", "survived (N steps)"), ("terminated", "reached a terminal state"),
                   ("return_at_least", "return at least …"), ("env_flag", "the env's own success flag")]


class LaunchForm(forms.Form):
    """The launch form's fields: one env, its tasks (scenarios picked from the env's catalog, or typed, times the levels
    of a perturbation sweep) and their settings. ``request_json`` (kept in sync both ways by static/js/launch.js) is
    what is submitted with JavaScript; without it, "Launch from these fields" builds the request here. Integer
    inputs are text with a numeric keyboard: a browser's number input rounds values beyond 2^53."""

    name = forms.CharField(required=False, max_length=200, validators=[validate_display_text])
    label = forms.CharField(required=False, max_length=200, validators=[validate_display_text], label="Label",
                            help_text="metadata.evaluationLabel: shown in lists when there is no name")
    models = forms.MultipleChoiceField(required=False, widget=forms.SelectMultiple(attrs={"size": 5}))
    env = forms.ChoiceField(required=False, label="Environment")
    task_ids = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
                               label="Task ids", help_text="one per line: scenario ids, <benchmark>/<index>, or free-form")
    scenarios = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    episodes = forms.IntegerField(required=False, min_value=1, initial=10, widget=forms.TextInput(attrs=_NUMERIC))
    seed = forms.IntegerField(required=False, min_value=0, initial=0, widget=forms.TextInput(attrs=_NUMERIC))
    workers = forms.IntegerField(required=False, min_value=1, initial=1, widget=forms.TextInput(attrs=_NUMERIC))
    max_steps = forms.IntegerField(required=False, min_value=1, label="Max steps", widget=forms.TextInput(attrs=_NUMERIC))
    perturbation = forms.ChoiceField(required=False, choices=[("none", "none")] + [(k, k) for k in perturbations.CATALOG])
    strengths = forms.CharField(required=False, label="Strengths",
                                help_text="one strength, or several for a sweep (comma-separated; none for an unperturbed level)")
    record = forms.ChoiceField(required=False, choices=RECORD_CHOICES, label="Record videos")
    record_first = forms.IntegerField(required=False, min_value=1, label="N", widget=forms.TextInput(attrs=_NUMERIC))
    success_kind = forms.ChoiceField(required=False, choices=SUCCESS_CHOICES, label="Success")
    success_steps = forms.IntegerField(required=False, min_value=1, label="steps", widget=forms.TextInput(attrs=_NUMERIC))
    success_threshold = forms.FloatField(required=False, label="threshold", widget=forms.TextInput(attrs={"inputmode": "decimal"}))
    timeout_seconds = forms.FloatField(required=False, min_value=1, label="Timeout (s)", widget=forms.TextInput(attrs={"inputmode": "decimal"}))
    tags = forms.CharField(required=False, help_text="key:value, comma-separated")
    env_vars = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), label="envVars",
                               help_text="KEY=value, one per line; set on every model's server")
    request_json = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false"}),
                                   label="Raw request (JSON)")

    def __init__(self, *args, organization: Organization, **kwargs):
        super().__init__(*args, **kwargs)
        models, envs, _ = catalog_choices(organization)
        self.catalogs = env_catalogs(organization)
        self.fields["models"].choices = models
        self.fields["env"].choices = [("", "—")] + envs
        self.fields["scenarios"].choices = sorted({(s["id"], s["id"]) for c in self.catalogs for s in c["scenarios"]})

    def clean_tags(self) -> str:
        return _pairs(self.cleaned_data.get("tags") or "", _items, ":", "tags must be key:value")

    def clean_env_vars(self) -> str:
        return _pairs(self.cleaned_data.get("env_vars") or "", _lines, "=", "envVars lines must be KEY=value")

    def clean_strengths(self) -> list[str]:
        return _items(self.cleaned_data.get("strengths") or "")

    def build_request(self) -> str:
        """The request JSON text built from the fields (the no-JavaScript submit); planning validates it."""
        return json.dumps(build_request(self.cleaned_data, self.data, self.catalogs), indent=2)


def _task_ids(data: dict, catalogs: list[dict]) -> list[str]:
    """The typed task ids in their order, then the checked scenarios of the chosen env not typed (catalog order)."""
    typed = _lines(data.get("task_ids") or "")
    known = next((c for c in catalogs if c["env"] == data.get("env")), {"scenarios": []})
    checked = [s["id"] for s in known["scenarios"] if s["id"] in (data.get("scenarios") or []) and s["id"] not in typed]
    return typed + checked


def _param_value(widget: dict, raw: str):
    if widget["choices"]:
        return next((c for c in widget["choices"] if str(c) == raw), raw)
    try:
        return {"int": int, "float": float, "bool": lambda v: {"true": True, "false": False}[v]}.get(widget["type"], str)(raw)
    except (KeyError, ValueError):
        return raw  # planning names the problem with its path


def _task_settings(data: dict, post, catalogs: list[dict]) -> dict:
    settings = {"episodes": data.get("episodes") or 10, "seed": data.get("seed") or 0}
    if (data.get("workers") or 1) > 1:
        settings["workers"] = data["workers"]
    if data.get("max_steps"):
        settings["maxSteps"] = data["max_steps"]
    record = data.get("record") or "none"
    if record != "none":
        settings["record"] = f"first:{data.get('record_first') or 1}" if record == "first" else record
    kind = data.get("success_kind")
    if kind:
        settings["successCriterion"] = {"kind": kind, **({"steps": data["success_steps"]} if kind == "survived" and data.get("success_steps") else {}),
                                        **({"threshold": data["success_threshold"]} if kind == "return_at_least" else {})}
    env = data.get("env") or ""
    widgets = {w["name"]: w for w in next((c["params"] for c in catalogs if c["env"] == env), [])}
    prefix = f"param:{env}:"
    # Every posted parameter of the chosen env, declared or not: planning refuses an undeclared one by its path,
    # as the API does, instead of the form dropping it unsaid.
    params = {name: _param_value(widgets[name], raw) if name in widgets else raw
              for name, raw in ((key[len(prefix):], (post.get(key) or "").strip()) for key in post if key.startswith(prefix))
              if raw}
    if params:
        settings["params"] = params
    return settings


def build_request(data: dict, post, catalogs: list[dict]) -> dict:
    """A request from the form's cleaned ``data`` (and the raw ``post`` for the per-env parameter widgets): every model
    runs one task per task id × perturbation level, all with the same settings."""
    env_vars = {}
    for line in _lines(data.get("env_vars") or ""):
        key, _, value = line.partition("=")
        env_vars[key.strip()] = value
    body: dict = {}
    if data.get("name"):
        body["name"] = data["name"]
    body["models"] = [{"model": m, **({"envVars": env_vars} if env_vars else {})} for m in data.get("models") or []]
    kind = data.get("perturbation") or "none"
    # No strength typed: the bare name, which planning refuses saying a strength is needed.
    levels = ["none"] if kind == "none" else [lvl if lvl == "none" else f"{kind}:{lvl}" for lvl in data.get("strengths") or []] or [kind]
    settings = _task_settings(data, post, catalogs)
    body["tasks"] = [{"env": data.get("env") or "", "taskId": task_id, **settings, **({"perturbation": p} if p != "none" else {})}
                     for task_id in _task_ids(data, catalogs) or [""] for p in levels]
    tags = {k.strip(): v.strip() for k, _, v in (pair.partition(":") for pair in _items(data.get("tags") or ""))}
    if tags:
        body["tags"] = tags
    if data.get("label"):
        body["metadata"] = {"evaluationLabel": data["label"]}
    if data.get("timeout_seconds"):
        body["timeoutSeconds"] = data["timeout_seconds"]
    return body


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


class CheckpointUploadForm(forms.Form):
    """A LeRobot checkpoint folder, archived, to become the organization's model-car image ``repository:tag``
    (services.model_cars)."""

    repository = forms.CharField(max_length=128, help_text="a repository name in your namespace, e.g. act-libero")
    tag = forms.CharField(max_length=128, initial="latest")
    archive = forms.FileField(
        label="Checkpoint (.zip, .tar, .tar.gz)",
        help_text="a LeRobot pretrained_model/ folder: config.json, model.safetensors and the saved processors",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,.tar,.tar.gz,.tgz"}),
    )

    def clean_repository(self) -> str:
        from .services.registry import is_repository_name

        name = self.cleaned_data["repository"].strip()
        if "/" in name or not is_repository_name(f"ns/{name}"):
            raise ValidationError("lowercase letters, digits and single . _ - between them (no /): the name in your "
                                  "namespace")
        return name

    def clean_tag(self) -> str:
        from .services.image_versions import tag_problem

        tag = self.cleaned_data["tag"].strip()
        problem = tag_problem(tag)
        if problem:
            raise ValidationError(problem)
        return tag
