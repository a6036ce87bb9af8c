"""The seed-004 run request (``POST /agents/evaluations/run``): DRF serializers, strict on types like
:mod:`evaluations.planning.schema`, documenting every field in OpenAPI. Semantic checks (the env, its tasks, the
endpoint's address, caps) are in :mod:`evaluations.planning.agent_runs`."""

from __future__ import annotations

from collections.abc import Mapping

from rest_framework import serializers

from .schema import DisplayTextField, StrictCharField, StrictIntegerField, unknown_fields_ignored

__all__ = ["AgentRunRequestSerializer", "EndpointSerializer", "MAX_KEY_BYTES", "MAX_PARAMS_BYTES", "MAX_STEPS",
           "MAX_TASK_IDS", "agent_unknown_field_warnings"]

MAX_TASK_IDS = 1000
MAX_STEPS = 1000
MAX_KEY_BYTES = 4096
MAX_PARAMS_BYTES = 16 * 1024


class StrictBooleanField(serializers.BooleanField):
    """``true``/``false`` only (DRF's BooleanField would take ``"yes"``, ``1``, ``"0"``)."""

    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class EndpointSerializer(serializers.Serializer):
    """Where the agent is served and how the platform talks to it (the bridge's config)."""

    url = StrictCharField(max_length=2048, trim_whitespace=False, help_text=(
        "`https://…`/`http://…` (an OpenAI-compatible base URL, or the HTTP agent protocol's step URL) or "
        "`tcp://host:port` (an rlmesh model server). No credentials in the URL; hosts that are not globally reachable "
        "(private, shared, loopback, link-local…) are refused at submit and at every connection, and redirects are "
        "not followed, unless the operator allows private targets (RLMESH_AGENT_ALLOW_PRIVATE_TARGETS)."))
    key = StrictCharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False, default=None,
                          help_text="Sent as `Authorization: Bearer <key>`; stored encrypted, never returned.")
    model = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=300, default=None,
                            help_text="The chat `model` sent to the endpoint (default `agent`).")
    use_wrapper = StrictBooleanField(required=False, allow_null=True, default=None, help_text=(
        "true (default): the message contract (GOAL/DOM text); false: the raw observation JSON."))
    send_tool_definitions = StrictBooleanField(required=False, allow_null=True, default=None, help_text=(
        "true (default): OpenAI `tools`; false: tools described in the system message, the call read from text."))
    use_openai_chat = StrictBooleanField(required=False, allow_null=True, default=None, help_text=(
        "true (default): chat completions at `{url}/v1/chat/completions`; false: the HTTP agent protocol."))
    minimal_observation = StrictBooleanField(required=False, allow_null=True, default=None, help_text=(
        "false: add a PNG screenshot to each observation (MiniWoB 160×210, shop 400×300); true/null: text only."))
    additional_params = serializers.JSONField(required=False, allow_null=True, default=None, help_text=(
        "A JSON object merged into every chat request (e.g. `temperature`); at most 16 KB."))

    def validate_key(self, value):
        if value is not None and len(value.encode("utf-8")) > MAX_KEY_BYTES:
            raise serializers.ValidationError(f"at most {MAX_KEY_BYTES} bytes")
        return value


class AgentRunRequestSerializer(serializers.Serializer):
    """A run: every task id × ``rollouts_per_example`` rollouts of the agent at ``endpoint``."""

    env_id = StrictCharField(max_length=300, help_text=(
        "An environment with tasks for agents: `miniwob` (= `prebuilt/miniwob`) or a full reference."))
    model = DisplayTextField(max_length=200, help_text="The agent's label in results (e.g. `my-agent-v1`).")
    task_ids = serializers.ListField(
        child=DisplayTextField(max_length=300), help_text=(
            f"1–{MAX_TASK_IDS} distinct task ids from `GET /agents/evaluations/tasks`, optionally with a seed suffix "
            "`.sNNNN` (e.g. `miniwob.book-flight.s0003`; default seed 0)."))
    rollouts_per_example = StrictIntegerField(required=False, default=1, min_value=1, help_text=(
        "Rollouts per task id (seeds seed, seed+1, …)."))
    max_steps = StrictIntegerField(required=False, allow_null=True, default=None, min_value=1, max_value=MAX_STEPS,
                                   help_text="Step cap per rollout (default: each task's own `max_steps`).")
    workers = StrictIntegerField(required=False, default=1, min_value=1, help_text=(
        "Extension: concurrent environments per task (each its own browser), at most the rollouts."))
    webhook_url = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=2048, default=None,
                                  help_text="http(s) URL receiving the signed status document when the run ends.")
    endpoint = EndpointSerializer()


def agent_unknown_field_warnings(data: Mapping) -> list[str]:
    """Warnings for fields the run request does not know (top level and ``endpoint``); they are ignored."""
    unknown = [k for k in data if k not in AgentRunRequestSerializer().fields]
    endpoint = data.get("endpoint")
    if isinstance(endpoint, Mapping):
        known = set(EndpointSerializer().fields)
        unknown += [f"endpoint.{k}" for k in endpoint if k not in known]
    return unknown_fields_ignored(unknown)
