"""The EvaluationRequest schema: DRF serializers that validate types and document every field in OpenAPI.

Strict on types (``"5"`` is not an integer, ``true`` is not a number), lenient on unknown fields (they
become warnings, see :func:`unknown_field_warnings`). Semantic checks (do the references exist, does the
scenario exist) live in the rest of :mod:`evaluations.planning`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rest_framework import serializers

from ..domain.outcomes import CRITERION_KINDS, criterion_problems
from ..domain.text import display_text_problem, quoted
from .parse import MAX_SEED

__all__ = [
    "EvaluationRequestSerializer",
    "ModelEntrySerializer",
    "TaskSerializer",
    "flatten_errors",
    "unknown_field_warnings",
]


class StrictIntegerField(serializers.IntegerField):
    """An integer that must be a JSON integer (not a bool, string or float)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A number that must be a JSON number (not a bool or string)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """A string that must be a JSON string (numbers are not coerced)."""

    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class DisplayTextField(StrictCharField):
    """A string other members see (a name, tag or label): no control characters other than tab and newline, no
    bidirectional overrides (:func:`evaluations.domain.text.display_text_problem`)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        problem = display_text_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class StrictDictField(serializers.DictField):
    default_error_messages = {"not_a_dict": 'Expected an object but got type "{input_type}".'}


ENV_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class EnvVarsField(StrictDictField):
    """Environment variables: POSIX-style names, string values (CharField refuses NUL bytes), at most 100."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if len(value) > 100:
            raise serializers.ValidationError("at most 100 environment variables")
        errors = {}
        for name in value:
            if not ENV_VAR_NAME.match(name):
                errors[name] = [f'"{name}" is not a valid environment variable name (letters, digits, _; not starting with a digit)']
        if errors:
            raise serializers.ValidationError(errors)
        return value


class PolicyEndpointSerializer(serializers.Serializer):
    """A policy served by its owner (a lab's GPU box) in openpi's websocket protocol, instead of an image."""

    url = StrictCharField(max_length=2048, help_text="`ws://host:port` or `wss://host:port` of the policy server "
                          "(openpi's `serve_policy.py`); checked at every connection, like agent endpoints")
    protocol = serializers.ChoiceField(["openpi"], help_text="`openpi`: openpi-client 0.1.2's wire (msgpack-numpy "
                                       "frames, the server's metadata first, `Authorization: Api-Key`)")
    key = StrictCharField(required=False, allow_blank=True, max_length=4096, trim_whitespace=False,
                          help_text="Sent as `Authorization: Api-Key <key>`; stored encrypted, never shown")
    replanSteps = StrictIntegerField(  # noqa: N815
        required=False, default=5, min_value=1, max_value=100,
        help_text="Actions of each reply's chunk replayed before the next call (openpi's LIBERO example: 5)")
    imageSize = StrictIntegerField(  # noqa: N815
        required=False, default=224, min_value=32, max_value=1024,
        help_text="Side the cameras are resized to, with padding (openpi's LIBERO example: 224)")
    timeoutSeconds = StrictFloatField(  # noqa: N815
        required=False, default=30.0, min_value=0.1, max_value=600.0,
        help_text="One call's time limit: the connection is dropped past it and the episode errors")

    def validate_url(self, value: str) -> str:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - a malformed port raises here
        except ValueError:
            raise serializers.ValidationError("is not a URL") from None
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise serializers.ValidationError("must be a ws:// or wss:// URL with a host")
        return value


class ModelEntrySerializer(serializers.Serializer):
    """One model (policy) to evaluate. A bare string is accepted as ``{"model": "<string>"}``."""

    default_error_messages = {  # noqa: RUF012 - DRF's own attribute
        "invalid": 'must be a model reference (a string) or an object with "model", not {datatype}',
    }

    model = StrictCharField(
        max_length=300,
        help_text="Model reference: `namespace/repository[/checkpoint][:tag|@sha256:…]`, e.g. "
        "`prebuilt/classic-control-heuristics` or `prebuilt/ppo/cartpole`. Without a tag the repository's "
        "current version is used; the resolved digest is recorded in the effective config. With `endpoint`: a "
        "display label for the policy server.",
    )
    endpoint = PolicyEndpointSerializer(required=False, help_text="A policy server to call instead of an image "
                                        "(`model` is then its label): `{\"url\": \"ws://…\", \"protocol\": "
                                        "\"openpi\"}`")
    envVars = EnvVarsField(  # noqa: N815 - wire name
        child=StrictCharField(allow_blank=True, max_length=4096, trim_whitespace=False),
        required=False,
        default=dict,
        help_text="Environment variables set on the model's server. Stored with the evaluation and "
        "visible to everyone in the organization under Raw request.",
    )


class TaskSerializer(serializers.Serializer):
    """One task: an environment, a task id (scenario), and how many episodes to run."""

    env = StrictCharField(max_length=300, help_text="Environment reference, e.g. `prebuilt/classic-control`.")
    taskId = DisplayTextField(  # noqa: N815
        max_length=300,
        help_text="For an environment with a scenario catalog, a scenario id `<benchmark>/<scenario>` "
        "(e.g. `classic/CartPole-v1`), or a scenario index `<benchmark>/<index>` (`classic/0`: the benchmark's first "
        "scenario in the catalog, as `rlmesh.platform.scenario_tasks` builds them; recorded by name in the effective "
        "config); the part before `/` is the benchmark in scores. Free-form otherwise.",
    )
    episodes = StrictIntegerField(min_value=1, help_text="Number of episodes (≥ 1; capped by the server).")
    seed = StrictIntegerField(
        required=False, default=0, min_value=0, max_value=MAX_SEED,
        help_text="Base seed: episode i runs with seed `seed + i`, however the task is split across workers.",
    )
    workers = StrictIntegerField(
        required=False, default=1, min_value=1,
        help_text="Split the episodes across this many parallel env workers; never changes which episodes run.",
    )
    maxSteps = StrictIntegerField(  # noqa: N815
        required=False, allow_null=True, default=None, min_value=1, max_value=100_000,
        help_text="Cap on env steps per episode; a capped episode is truncated with stop condition `max_steps`.",
    )
    perturbation = StrictCharField(
        required=False, allow_null=True, allow_blank=True, default=None, max_length=128,
        help_text="`<name>:<strength>` from the perturbation catalog (obs_noise:σ, action_noise:σ, action_repeat:k, "
        "action_delay:k, physics:s), or `none`/null. Applied reproducibly from each episode's seed.",
    )
    record = StrictCharField(
        required=False, allow_null=True, allow_blank=True, default=None, max_length=32,
        help_text="Episode videos: `all`, `failures`, `first:N`, or `none`/null (default). H.264 MP4 from the env's "
        "rendered frames, played in the dashboard's Episodes tab.",
    )
    recordSteps = StrictCharField(  # noqa: N815
        required=False, allow_null=True, allow_blank=True, default=None, max_length=32,
        help_text="Keep the steps of episodes (every observation, the action the env received, reward, end flags) for "
        "a dataset export (`/lerobot-dataset`): `all`, `failures`, `first:N`, or `none`/null (default). On an env "
        "with a `cameras` parameter (LIBERO) the cameras are rendered unless `params.cameras` says otherwise.",
    )
    params = StrictDictField(
        child=serializers.JSONField(), required=False, default=dict,
        help_text="Extra make parameters of the env, checked against the parameters it declares (e.g. "
        "`{\"image_size\": 128}` on `prebuilt/metaworld` adds a camera image); the scenario's own parameters "
        "cannot be overridden.",
    )
    successCriterion = serializers.JSONField(  # noqa: N815
        required=False, allow_null=True, default=None,
        help_text="What success means for this task, overriding the env's own flag and the criterion its catalog "
        "declares for the scenario: `{\"kind\": \"survived\", \"steps\": 500}`, `{\"kind\": \"terminated\"}`, "
        "`{\"kind\": \"return_at_least\", \"threshold\": 200}` or `{\"kind\": \"env_flag\"}` (only the env's "
        "`info[\"success\"]`/`info[\"is_success\"]`), with an optional `description`. When neither the env nor the "
        "request defines success, episodes have `success: null` (source `undefined`) and the success rate is null; "
        "returns are still scored. Kinds: " + "; ".join(f"`{k}`: {v}" for k, v in CRITERION_KINDS.items()) + ".",
    )
    metadata = StrictDictField(
        child=serializers.JSONField(), required=False, default=dict,
        help_text="Free-form metadata stored with the task (e.g. `environmentId`).",
    )

    def validate_successCriterion(self, value):  # noqa: N802 - DRF names it after the wire field
        if value is None:
            return None
        problems = criterion_problems(value)
        whole = [message for sub, message in problems if not sub]
        if whole:
            raise serializers.ValidationError(whole)
        if problems:
            errors: dict[str, list[str]] = {}
            for sub, message in problems:
                errors.setdefault(sub.lstrip("."), []).append(message)
            raise serializers.ValidationError(errors)
        return dict(value)


class EvaluationRequestSerializer(serializers.Serializer):
    """An evaluation request: every model runs every task (M × T workloads of N episodes)."""

    models = ModelEntrySerializer(
        many=True, required=False, allow_empty=False,
        help_text="Models to evaluate. A single `model` (object or string) is accepted instead.",
    )
    model = ModelEntrySerializer(required=False, help_text="Shorthand for `models` with one entry.")
    tasks = TaskSerializer(many=True, allow_empty=False, help_text="Tasks to run every model on.")
    name = DisplayTextField(required=False, allow_blank=True, max_length=200, help_text="Display name.")
    tags = StrictDictField(
        child=DisplayTextField(allow_blank=True, max_length=200), required=False, default=dict,
        help_text="String tags; list filters match `tag=key:value`.",
    )
    metadata = StrictDictField(
        child=serializers.JSONField(), required=False, default=dict,
        help_text="Free-form metadata; `evaluationLabel` is shown when there is no name.",
    )
    timeoutSeconds = StrictFloatField(  # noqa: N815
        required=False, allow_null=True, default=None, min_value=1, max_value=30 * 24 * 3600,
        help_text="Wall-time budget for the whole evaluation from its start; past it the evaluation fails.",
    )

    def validate_tags(self, tags: dict) -> dict:
        if len(tags) > 50:
            raise serializers.ValidationError("at most 50 tags")
        errors = {}
        for key in tags:
            if not key or ":" in key or len(key) > 100:
                errors[key] = ['a tag key must be 1–100 characters and contain no ":"']
            elif display_text_problem(key):
                errors[key] = [f"the tag key {display_text_problem(key)}"]
        if errors:
            raise serializers.ValidationError(errors)
        return tags

    def validate_metadata(self, metadata: dict) -> dict:
        label = metadata.get("evaluationLabel")
        if isinstance(label, str) and display_text_problem(label):
            raise serializers.ValidationError({"evaluationLabel": [display_text_problem(label)]})
        return metadata

    def validate(self, attrs):
        if "models" in attrs and "model" in attrs:
            raise serializers.ValidationError({"model": ["Give either `models` or `model`, not both."]})
        if "models" not in attrs and "model" not in attrs:
            raise serializers.ValidationError({"models": ["This field is required."]})
        if "model" in attrs:
            attrs["models"] = [attrs.pop("model")]
        return attrs


#: Fields from the upstream guide that this platform accepts but does not act on.
IGNORED_FIELDS = {"maxBatchSize", "clientsPerServer", "managed"}


#: Unknown fields named one by one in a plan's warnings; the rest are counted in one more warning, so a request's
#: stored warnings cannot grow with its number of unknown fields.
MAX_NAMED_UNKNOWN_FIELDS = 10
#: Characters of an unknown field's path a warning quotes (a key may be as long as the body).
MAX_QUOTED_PATH = 100


def unknown_fields_ignored(paths: list[str]) -> list[str]:
    """Warnings that the fields at ``paths`` (JSON paths such as ``tasks[0].foo``) were ignored: one per path for
    the first MAX_NAMED_UNKNOWN_FIELDS (each quoted up to MAX_QUOTED_PATH characters, controls and quotes escaped:
    ``domain.text.quoted``), then one counting the rest."""
    warnings = [f"unknown field {quoted(p, MAX_QUOTED_PATH)} was ignored" for p in paths[:MAX_NAMED_UNKNOWN_FIELDS]]
    rest = len(paths) - MAX_NAMED_UNKNOWN_FIELDS
    if rest > 0:
        warnings.append(f"{rest:,} more unknown field{'s were' if rest != 1 else ' was'} ignored")
    return warnings


def unknown_field_warnings(data: Mapping) -> list[str]:
    """Warnings for fields the schema does not know (top level, models[i], tasks[i]); they are ignored."""
    warnings: list[str] = []
    unknown: list[str] = []

    def check(obj, serializer_cls, path):
        if not isinstance(obj, Mapping):
            return
        known = set(serializer_cls().fields)
        for key in obj:
            if key not in known:
                if path == "" and key in IGNORED_FIELDS:
                    warnings.append(f'"{key}" is not used by this platform and was ignored')
                else:
                    unknown.append(f"{path}{key}")

    check(data, EvaluationRequestSerializer, "")
    models = data.get("models")
    if isinstance(models, list):
        for i, entry in enumerate(models):
            check(entry, ModelEntrySerializer, f"models[{i}].")
    if isinstance(data.get("model"), Mapping):
        check(data["model"], ModelEntrySerializer, "model.")
    tasks = data.get("tasks")
    if isinstance(tasks, list):
        for i, entry in enumerate(tasks):
            check(entry, TaskSerializer, f"tasks[{i}].")
    return warnings + unknown_fields_ignored(unknown)


def flatten_errors(errors, prefix: str = "") -> list[dict]:
    """Turn DRF's nested ``serializer.errors`` into ``[{"path": "tasks[0].env", "message": …}]``."""
    out: list[dict] = []
    if isinstance(errors, Mapping):
        for key, value in errors.items():
            if key in ("non_field_errors", "__all__"):
                path = prefix
            elif isinstance(key, int):
                path = f"{prefix}[{key}]"
            else:
                path = f"{prefix}.{key}" if prefix else str(key)
            out.extend(flatten_errors(value, path))
    elif isinstance(errors, list):
        if errors and all(isinstance(e, str) for e in errors):
            out.extend({"path": prefix or "$", "message": str(e)} for e in errors)
        else:
            for i, value in enumerate(errors):
                if value:
                    out.extend(flatten_errors(value, f"{prefix}[{i}]"))
    else:
        out.append({"path": prefix or "$", "message": str(errors)})
    return out
