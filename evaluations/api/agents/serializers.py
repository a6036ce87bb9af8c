"""Response serializers of the ``/agents`` API (seed 004); they also document every response in OpenAPI."""

from __future__ import annotations

from rest_framework import serializers

from ...domain.verdicts import COUNTED_AS

__all__ = ["AgentEvaluationListSerializer", "RunCreatedSerializer", "StatusDocumentSerializer",
           "TaskCatalogSerializer", "TranscriptSerializer"]


class AgentProgressSerializer(serializers.Serializer):
    completed_rollouts = serializers.IntegerField()
    total_rollouts = serializers.IntegerField()
    current_episode_id = serializers.CharField(allow_null=True, help_text="the rollout running now, while running")
    current_task_id = serializers.CharField(allow_null=True)


class AgentTokenUsageSerializer(serializers.Serializer):
    """Tokens as the endpoint reported them, summed over the steps that reported each field (null: none did)."""

    prompt_tokens = serializers.IntegerField(allow_null=True)
    completion_tokens = serializers.IntegerField(allow_null=True)
    total_tokens = serializers.IntegerField(allow_null=True)
    cached_tokens = serializers.IntegerField(allow_null=True, help_text=(
        "usage.prompt_tokens_details.cached_tokens: a part of prompt_tokens, never added to it"))
    reasoning_tokens = serializers.IntegerField(allow_null=True, help_text=(
        "usage.completion_tokens_details.reasoning_tokens: a part of completion_tokens"))


class AgentVerifierSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["page", "state", "judge"], required=False, help_text=(
        "page: the page's own check (MiniWoB); state: a state check (shop.state.v1, shown in `check`); judge: "
        "the run's judge endpoint"))
    passed = serializers.BooleanField(allow_null=True, help_text="null: not decided (the judge could not be asked)")
    score = serializers.FloatField(allow_null=True)
    detail = serializers.CharField(allow_blank=True, help_text="the message naming what the check saw")
    check = serializers.DictField(required=False, help_text="state checks: the check as written")


#: The seed-004 words (the /v1 episodes use ``choices.StopCondition``; both named in ENUM_NAME_OVERRIDES).
AGENT_STOP_CONDITIONS = ("terminal_action", "max_steps", "timeout", "error", "cancelled", "rate_limited",
                         "endpoint_unavailable")
AGENT_OUTCOMES = ("pass", "fail", "error", "timeout", "unverified")


class AgentResultSerializer(serializers.Serializer):
    example_id = serializers.IntegerField(help_text="the task's index in the run's task_ids")
    rollout_id = serializers.CharField(help_text="<run_id>_<example_id>_<rollout>")
    episode_id = serializers.CharField()
    task = serializers.CharField()
    reward = serializers.FloatField(allow_null=True, help_text=(
        "MiniWoB: the page's raw reward, -1 clamped to 0; shop: the fraction of verifiers passed; null without "
        "evidence (not run, cancelled, an endpoint or env error, unverified)"))
    task_passed = serializers.BooleanField(allow_null=True, help_text=(
        "null without evidence (not run, cancelled, an endpoint or env error, unverified): never a guessed pass "
        "or fail"))
    task_outcome = serializers.ChoiceField(choices=AGENT_OUTCOMES)
    counted_as = serializers.ChoiceField(choices=COUNTED_AS, help_text=(
        "extension: where the rollout is counted; only `scored` ones enter the success rate, pass@k and their "
        "intervals"))
    is_completed = serializers.BooleanField(help_text="the environment ended the episode")
    is_truncated = serializers.BooleanField(help_text="the step cap ended it")
    stop_condition = serializers.ChoiceField(choices=AGENT_STOP_CONDITIONS, help_text=(
        "rate_limited / endpoint_unavailable (extensions): the endpoint kept answering 429, or 5xx / timeouts / "
        "refused connections, until the bridge's retries ran out; not the agent's failure (task_passed null)"))
    verifiers = AgentVerifierSerializer(many=True)
    error = serializers.CharField(allow_null=True)
    seed = serializers.IntegerField(help_text="extension: the episode seed")
    steps = serializers.IntegerField(help_text="extension")
    usage = AgentTokenUsageSerializer(allow_null=True, help_text="extension: tokens the endpoint reported, summed; "
                                                                 "null when no step's reply carried usage")
    usage_missing_steps = serializers.IntegerField(help_text="extension: steps whose reply carried no usage")
    endpoint_ms = serializers.FloatField(allow_null=True, help_text=(
        "extension: time waiting on the endpoint's answers that were used, summed over steps"))
    retry_ms = serializers.FloatField(allow_null=True, help_text=(
        "extension: time lost to failed attempts and backoff between retries, summed over steps"))
    retry_after_ms = serializers.FloatField(allow_null=True, help_text="extension: the part of the backoff the "
                                                                       "endpoint asked for with Retry-After")
    tool_call_errors = serializers.DictField(child=serializers.IntegerField(), help_text=(
        "extension: unreadable replies by name (no_tool_call, unparsed_tool_call, multiple_tool_calls, "
        "tool_call_in_content, tool_call_in_reasoning, invalid_tool_call)"))
    transcript_url = serializers.CharField(allow_null=True, help_text="extension: relative to /agents")
    trajectory_digest = serializers.CharField(allow_null=True, help_text=(
        "extension: SHA-256 over the rollout's observations, actions, rewards and end flags (as trajectoryDigest "
        "on /v1 episodes); null when not recorded"))
    digest_comparable = serializers.BooleanField(allow_null=True, help_text=(
        "extension: false for the browser envs (MiniWoB, the shop), whose pages run in real time, so the same "
        "actions need not give the same rollout twice; null without a digest"))


class AgentEvaluationResultsSerializer(serializers.Serializer):
    id = serializers.CharField()
    results = AgentResultSerializer(many=True)


class AgentUsageTotalsSerializer(AgentTokenUsageSerializer):
    rollouts = serializers.IntegerField()
    passed = serializers.IntegerField()
    unverified = serializers.IntegerField(help_text="rollouts no check decided (open runs with no verifiers or judge), "
                                                    "timed out or not")
    steps = serializers.IntegerField()
    usage_missing_steps = serializers.IntegerField(help_text="steps whose reply carried no usage")
    usage_partial = serializers.BooleanField(help_text="the token sums cover fewer steps than ran")
    endpoint_ms = serializers.FloatField()
    endpoint_ms_per_step = serializers.FloatField(allow_null=True)
    retry_ms = serializers.FloatField()
    retry_after_ms = serializers.FloatField()


class AgentTaskUsageSerializer(AgentUsageTotalsSerializer):
    task = serializers.CharField()


class AgentUsageSerializer(AgentUsageTotalsSerializer):
    tasks = AgentTaskUsageSerializer(many=True)


class AgentPassKRowSerializer(serializers.Serializer):
    k = serializers.IntegerField()
    pass_at_k = serializers.FloatField(help_text="mean over tasks of 1 − C(n−c, k)/C(n, k) (Chen et al. 2021)")
    pass_at_k_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2,
                                         help_text="95% percentile bootstrap over tasks; null under 2 tasks")
    pass_hat_k = serializers.FloatField(help_text="mean over tasks of C(c, k)/C(n, k) (τ-bench)")
    pass_hat_k_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2,
                                          max_length=2)


class AgentPassKSerializer(serializers.Serializer):
    tasks = serializers.IntegerField()
    min_rollouts = serializers.IntegerField(help_text="the smallest n: k goes up to it, never beyond")
    max_rollouts = serializers.IntegerField()
    confidence = serializers.FloatField()
    interval = serializers.CharField()
    rows = AgentPassKRowSerializer(many=True)


class AgentEndpointFailuresSerializer(serializers.Serializer):
    rate_limited = serializers.IntegerField()
    endpoint_unavailable = serializers.IntegerField()


class AgentSummarySerializer(serializers.Serializer):
    """Outcome counts, the success rate and pass@k / pass^k (docs/using/agent-metrics.md)."""

    rollouts = serializers.IntegerField(help_text="rollouts that ran")
    scored = serializers.IntegerField(help_text="pass + fail + timeout: the success rate's denominator")
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    timeouts = serializers.IntegerField()
    unverified = serializers.IntegerField()
    endpoint_failures = AgentEndpointFailuresSerializer(help_text="rollouts the endpoint ended; not in the rate")
    errors = serializers.IntegerField(help_text="other errors (the env or the platform broke); not in the rate")
    cancelled = serializers.IntegerField()
    success_rate = serializers.FloatField(allow_null=True)
    success_rate_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2,
                                            max_length=2, help_text="95% Wilson interval")
    success_rate_denominator = serializers.CharField()
    tool_call_errors = serializers.DictField(child=serializers.IntegerField())
    tasks_without_scored_rollouts = serializers.IntegerField()
    pass_k = AgentPassKSerializer(allow_null=True, help_text="null when no task has a scored rollout")


class AgentDeliverySerializer(serializers.Serializer):
    attempt = serializers.IntegerField()
    webhook_id = serializers.CharField()
    status_code = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    duration_ms = serializers.FloatField(allow_null=True)
    at = serializers.CharField()
    next_attempt_at = serializers.CharField(allow_null=True)


class AgentWebhookSerializer(serializers.Serializer):
    url = serializers.CharField(allow_null=True)
    deliveries = AgentDeliverySerializer(many=True)


class StatusDocumentSerializer(serializers.Serializer):
    """A run's status (seed 004) with the extensions ``usage``, ``summary``, ``error``, ``warnings``,
    ``dashboard_url`` and ``webhook``."""

    run_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=["QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"])
    progress = AgentProgressSerializer()
    env_id = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_null=True)
    started_at = serializers.CharField(allow_null=True)
    completed_at = serializers.CharField(allow_null=True)
    evaluation_id = serializers.CharField()
    run_output_path = serializers.CharField(help_text="GET /agents/<run_output_path>: results.json and transcripts")
    evaluations = AgentEvaluationResultsSerializer(many=True)
    error = serializers.CharField(allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField())
    usage = AgentUsageSerializer()
    summary = AgentSummarySerializer(help_text="extension: outcome counts, success rate, pass@k and pass^k")
    dashboard_url = serializers.CharField()
    webhook = AgentWebhookSerializer(required=False)


class RunCreatedSerializer(serializers.Serializer):
    run_id = serializers.UUIDField()
    status = serializers.CharField()
    status_url = serializers.CharField(help_text="relative to /agents, e.g. /evaluations/run/<run_id>/status")
    message = serializers.CharField()
    evaluation_id = serializers.CharField(help_text="extension")
    warnings = serializers.ListField(child=serializers.CharField(), help_text="extension: ignored fields")
    dashboard_url = serializers.CharField(help_text="extension")


class AgentTaskSerializer(serializers.Serializer):
    task_id = serializers.CharField()
    name = serializers.CharField()
    goal = serializers.CharField(help_text="the goal sentence (MiniWoB: an example of what the page generates)")
    description = serializers.CharField()
    max_steps = serializers.IntegerField(allow_null=True)
    tools = serializers.ListField(child=serializers.CharField())
    profile_id = serializers.CharField(allow_null=True, help_text="extension: the user signed in (shop tasks)")
    verifiers = serializers.ListField(child=serializers.DictField(), allow_null=True, help_text=(
        "extension: the task's state checks (shop tasks; vocabulary shop.state.v1), null where the env checks "
        "itself (MiniWoB's page reward)"))


class AgentOpenRunsSerializer(serializers.Serializer):
    profiles = serializers.ListField(child=serializers.CharField(), help_text="valid profile_id values")
    default_profile = serializers.CharField(allow_null=True)
    verifier_vocabulary = serializers.CharField(allow_null=True, help_text="the language of request verifiers")
    default_max_steps = serializers.IntegerField(allow_null=True)


class AgentEnvironmentSerializer(serializers.Serializer):
    env_id = serializers.CharField()
    reference = serializers.CharField()
    description = serializers.CharField()
    tasks = AgentTaskSerializer(many=True)
    open_runs = AgentOpenRunsSerializer(allow_null=True, help_text="extension: POST /agents/runs/open on this env")


class TaskCatalogSerializer(serializers.Serializer):
    environments = AgentEnvironmentSerializer(many=True)


class AgentEvaluationSummarySerializer(serializers.Serializer):
    run_id = serializers.UUIDField()
    evaluation_id = serializers.CharField()
    status = serializers.CharField()
    env_id = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_null=True)
    progress = AgentProgressSerializer()
    created_at = serializers.CharField()
    started_at = serializers.CharField(allow_null=True)
    completed_at = serializers.CharField(allow_null=True)
    status_url = serializers.CharField()


class AgentEvaluationListSerializer(serializers.Serializer):
    items = AgentEvaluationSummarySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class TranscriptSerializer(serializers.Serializer):
    """One rollout's transcript (runs.transcripts): ordered, typed events and the rollout's summary."""

    schema = serializers.CharField()
    evaluation = serializers.CharField()
    runId = serializers.CharField()  # noqa: N815
    task = serializers.CharField()
    seed = serializers.IntegerField(allow_null=True)
    summary = serializers.DictField()
    events = serializers.ListField(child=serializers.DictField())

    def to_representation(self, instance):
        return dict(instance)  # the stored document as written (already redacted)
