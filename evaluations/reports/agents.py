"""The read side of agent runs (seed 004): an evaluation as the status document, its rollouts as results, the
token usage and endpoint time summed per rollout, per task and per run, and the run's ``summary`` (outcome counts,
success rate, pass@k and pass^k).

Every verdict is :func:`evaluations.domain.verdicts.rollout_verdict`'s: a rollout without evidence (cancelled before
it ran, the endpoint gave up — ``rate_limited`` / ``endpoint_unavailable`` —, the env or the platform broke, or no
check decided it, timed out or not) has ``task_passed`` and ``reward`` null, is counted apart by its reason
(``counted_as``) and left out of the success rate's denominator and of pass@k, as Inspect AI leaves errored
samples unscored and AgentLab/BrowserGym count ``err_msg`` episodes apart for relaunching
(``docs/using/agent-metrics.md``).

Any evaluation has a status document; one whose env's tasks are for agents (their scenarios declare ``tools``) is
an agent evaluation, whether it came through ``/agents`` or ``/v1``. Rollout ids are ``<run_id>_<example>_<rollout>``
(example = the task's index in the run, rollout = the episode index); episode ids ``ep_`` + 10 hex digits derived
from the rollout id.
"""

from __future__ import annotations

import hashlib
import re

from django.conf import settings
from django.db.models import QuerySet

from ..agents.transport import FAILURE_KINDS, USAGE_FIELDS
from ..choices import EpisodeStatus, EvaluationStatus, ImageKind, ShardStatus, StopCondition
from ..domain.pass_k import pass_k_table
from ..domain.scoring import wilson_interval
from ..domain.verdicts import COUNTED_AS, Verdict, rollout_verdict
from ..models import Episode, Evaluation, ImageVersion, Organization, Shard

__all__ = ["STATUS_WORDS", "agent_env_versions", "agent_metrics", "agent_evaluations", "agent_summary", "agent_usage",
           "episode_public_id", "episode_verdict", "find_rollout", "result_of", "rollout_id", "status_document",
           "timed_out", "usage_camel"]

#: Evaluation status → the seed's status word.
STATUS_WORDS = {
    EvaluationStatus.QUEUED: "QUEUED", EvaluationStatus.RUNNING: "RUNNING", EvaluationStatus.CANCELLING: "RUNNING",
    EvaluationStatus.COMPLETED: "COMPLETED", EvaluationStatus.FAILED: "FAILED", EvaluationStatus.CANCELLED: "CANCELLED",
}
#: What the success rate's denominator holds (said in every summary).
DENOMINATOR = ("scored rollouts (pass, fail, timeout); endpoint failures (rate_limited, endpoint_unavailable), "
               "other errors, unverified rollouts (timed out or not) and cancelled rollouts are counted apart and "
               "left out")
_ROLLOUT = re.compile(r"^(?P<run>[0-9a-f-]{36})_(?P<example>\d{1,6})_(?P<rollout>\d{1,9})$")


def agent_env_versions(organization: Organization | None = None) -> list[int]:
    """Ids of the env versions whose scenarios include tasks for agents (visible to ``organization`` if given)."""
    qs = ImageVersion.objects.filter(repository__kind=ImageKind.ENV)
    if organization is not None:
        from ..models import ImageRepository

        qs = qs.filter(repository__in=ImageRepository.objects.visible_to(organization))
    return [pk for pk, scenarios in qs.values_list("pk", "scenarios")
            if any(isinstance(s, dict) and s.get("tools") for s in scenarios or [])]


def agent_evaluations(organization: Organization) -> QuerySet[Evaluation]:
    """The organization's agent evaluations: through ``/agents``, or on ``/v1`` with an env that has agent tasks."""
    return Evaluation.objects.for_org(organization).filter(
        workloads__env_version_id__in=agent_env_versions(organization)).distinct()


def rollout_id(run_id, example: int, rollout: int) -> str:
    return f"{run_id}_{example}_{rollout}"


def episode_public_id(run_id, example: int, rollout: int) -> str:
    return "ep_" + hashlib.sha256(rollout_id(run_id, example, rollout).encode()).hexdigest()[:10]


def find_rollout(evaluation: Evaluation, rollout: str) -> Episode | None:
    """The recorded episode a rollout id names within ``evaluation`` (None for another run's or a missing one)."""
    match = _ROLLOUT.match(rollout)
    if not match or match["run"] != str(evaluation.run_id):
        return None
    return evaluation.episodes.filter(workload__index=int(match["example"]), index=int(match["rollout"])) \
        .select_related("workload").first()


def env_id_of(evaluation: Evaluation, workloads: list) -> str | None:
    agent = evaluation.config.get("agent") or {}
    if agent.get("envId"):
        return agent["envId"]
    if not workloads:
        return None
    ref = re.split(r"[:@]", workloads[0].env_ref, maxsplit=1)[0]
    return ref.removeprefix("prebuilt/")


def _endpoint_failure(agent: dict) -> str | None:
    """``rate_limited`` / ``endpoint_unavailable`` when the endpoint ended the rollout (older records: ``ending``
    ``endpoint_error``), else None."""
    if agent.get("endpointFailure") in FAILURE_KINDS:
        return agent["endpointFailure"]
    return "endpoint_unavailable" if agent.get("endpointError") or agent.get("ending") == "endpoint_error" else None


def timed_out(e: Episode) -> bool:
    """Whether the page's timer or the wall-time cap ended the rollout."""
    return (e.agent or {}).get("ending") == "timeout" or e.stop_condition == StopCondition.WALL_TIME


def episode_verdict(e: Episode) -> Verdict:
    """The verdict of a recorded rollout by the one rule (:func:`evaluations.domain.verdicts.rollout_verdict`)."""
    errored = e.status == EpisodeStatus.ERROR
    return rollout_verdict(errored=errored, endpoint_failure=_endpoint_failure(e.agent or {}) if errored else None,
                           timed_out=timed_out(e), success=e.success, reward=e.reward)


def _stop(e: Episode, verdict: Verdict) -> str:
    """The seed's ``stop_condition`` of a recorded rollout: how it ended, whatever its verdict."""
    if e.status == EpisodeStatus.ERROR:
        return verdict.counted_as  # rate_limited, endpoint_unavailable or error
    if timed_out(e):
        return "timeout"
    if e.stop_condition == StopCondition.MAX_STEPS or (e.agent or {}).get("ending") == "max_steps":
        return "max_steps"
    return "terminal_action"


def result_of(e: Episode, run_id) -> dict:
    """One rollout as the seed's result object, plus extensions (``seed``, ``steps``, ``usage`` with cached and
    reasoning tokens, ``usage_missing_steps``, ``endpoint_ms``, ``retry_ms``, ``retry_after_ms``,
    ``tool_call_errors``, ``transcript_url`` relative to ``/agents``, ``counted_as``). ``task_outcome``,
    ``task_passed``, ``reward`` and ``counted_as`` are :func:`episode_verdict`'s: a rollout without evidence (the
    endpoint or the env broke it, or no check decided it) has ``task_passed`` and ``reward`` null."""
    w = e.workload
    verdict = episode_verdict(e)
    stop = _stop(e, verdict)
    agent = e.agent or {}
    rid = rollout_id(run_id, w.index, e.index)
    usage = {k: (agent.get("usage") or {}).get(k) for k in USAGE_FIELDS} if agent.get("usageReported") else None
    return {
        "example_id": w.index, "rollout_id": rid, "episode_id": episode_public_id(run_id, w.index, e.index),
        "task": w.task_id, "reward": verdict.reward, "task_passed": verdict.passed, "task_outcome": verdict.outcome,
        "counted_as": verdict.counted_as,
        "is_completed": e.status == EpisodeStatus.COMPLETED and bool(e.terminated), "is_truncated": stop == "max_steps",
        "stop_condition": stop, "verifiers": list(e.verifiers or []), "error": e.error or None,
        "seed": e.seed, "steps": e.steps, "usage": usage, "usage_missing_steps": int(agent.get("usageMissingSteps") or 0),
        "endpoint_ms": agent.get("endpointMs"), "retry_ms": agent.get("retryMs"),
        "retry_after_ms": agent.get("retryAfterMs"), "tool_call_errors": dict(agent.get("toolCallErrors") or {}),
        "transcript_url": f"/evaluations/run/{run_id}/transcripts/{rid}" if e.transcript else None,
        "trajectory_digest": e.trajectory_digest or None,
        "digest_comparable": e.digest_comparable if e.trajectory_digest else None,
    }


def _not_run(run_id, w, index: int) -> dict:
    rid = rollout_id(run_id, w.index, index)
    verdict = rollout_verdict(ran=False)
    return {"example_id": w.index, "rollout_id": rid, "episode_id": episode_public_id(run_id, w.index, index),
            "task": w.task_id, "reward": verdict.reward, "task_passed": verdict.passed,
            "task_outcome": verdict.outcome, "counted_as": verdict.counted_as, "is_completed": False,
            "is_truncated": False, "stop_condition": "cancelled", "verifiers": [],
            "error": "not run: the run was cancelled", "seed": w.seed_for(index), "steps": 0, "usage": None,
            "usage_missing_steps": 0, "endpoint_ms": None, "retry_ms": None, "retry_after_ms": None,
            "tool_call_errors": {}, "transcript_url": None, "trajectory_digest": None, "digest_comparable": None}


def _current(evaluation: Evaluation, recorded: set) -> tuple[str | None, str | None]:
    """(episode id, task id) of the rollout a running shard is on now, or (None, None)."""
    if evaluation.status not in (EvaluationStatus.RUNNING, EvaluationStatus.CANCELLING):
        return None, None
    for shard in Shard.objects.filter(evaluation=evaluation, status=ShardStatus.RUNNING).select_related("workload"):
        w = shard.workload
        for index in range(shard.start, shard.stop):
            if (w.index, index) not in recorded:
                return episode_public_id(evaluation.run_id, w.index, index), w.task_id
    return None, None


def _sum(rows: list[dict]) -> dict:
    usage = dict.fromkeys(USAGE_FIELDS)
    for r in rows:
        for k, v in (r["usage"] or {}).items():
            if v is not None:
                usage[k] = (usage[k] or 0) + v
    missing = sum(r["usage_missing_steps"] for r in rows)
    steps = sum(r["steps"] for r in rows)
    endpoint = round(sum(r["endpoint_ms"] or 0 for r in rows), 3)
    return {"rollouts": len(rows), "passed": sum(r["task_passed"] is True for r in rows),
            "unverified": sum(r["counted_as"] == "unverified" for r in rows), "steps": steps, **usage,
            "usage_missing_steps": missing, "usage_partial": bool(missing) and any(r["usage"] for r in rows),
            "endpoint_ms": endpoint, "endpoint_ms_per_step": round(endpoint / steps, 3) if steps else None,
            "retry_ms": round(sum(r["retry_ms"] or 0 for r in rows), 3),
            "retry_after_ms": round(sum(r["retry_after_ms"] or 0 for r in rows), 3)}


def agent_usage(results: list[dict]) -> dict:
    """Token usage (as the endpoint reported it) and endpoint time, for the run and per task: ``{"rollouts",
    "passed", "unverified", "steps", "prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens",
    "reasoning_tokens", "usage_missing_steps", "usage_partial", "endpoint_ms", "endpoint_ms_per_step", "retry_ms",
    "retry_after_ms", "tasks": [{"task", ...same}]}``. A token field is null when no step reported it; cached and
    reasoning tokens are parts of prompt and completion tokens, never added to them; ``usage_partial``: some steps
    answered without usage, so the sums cover fewer steps than ran. ``endpoint_ms`` is the time waiting on the
    answers used, ``retry_ms`` the time lost to failed attempts and backoff (``retry_after_ms`` of it asked for by
    ``Retry-After``)."""
    ran = [r for r in results if r["counted_as"] != "cancelled"]
    tasks: dict[str, list[dict]] = {}
    for r in ran:
        tasks.setdefault(r["task"], []).append(r)
    return {**_sum(ran), "tasks": [{"task": t, **_sum(rows)} for t, rows in tasks.items()]}


def agent_summary(results: list[dict]) -> dict:
    """The run's outcome counts, success rate and pass@k / pass^k (:mod:`evaluations.domain.pass_k`).

    ``scored`` rollouts (pass, fail, timeout) make the success rate's denominator (``success_rate_denominator``
    says so); ``endpoint_failures`` (by kind), ``errors``, ``unverified`` and ``cancelled`` are counted apart.
    ``pass_k`` uses each task's scored rollouts (a task is one entry of ``task_ids``, its ``example_id``): ``rows``
    for every k up to the smallest n (null without any scored task; ``tasks_without_scored_rollouts`` counts the
    tasks left out). ``tool_call_errors`` sums the named unreadable replies over rollouts.
    """
    counted = {kind: [r for r in results if r["counted_as"] == kind] for kind in COUNTED_AS}
    ran = [r for r in results if r["counted_as"] != "cancelled"]
    scored = counted["scored"]
    passed = sum(r["task_passed"] is True for r in scored)
    by_task: dict[int, list[int]] = {r["example_id"]: [0, 0] for r in ran}
    for r in scored:
        by_task[r["example_id"]][0] += 1
        by_task[r["example_id"]][1] += r["task_passed"] is True
    tool_errors: dict[str, int] = {}
    for r in ran:
        for code, n in r["tool_call_errors"].items():
            tool_errors[code] = tool_errors.get(code, 0) + n
    tasks = [(n, c) for n, c in by_task.values() if n]
    return {
        "rollouts": len(ran), "scored": len(scored), "passed": passed,
        "failed": sum(r["task_outcome"] == "fail" for r in scored),
        "timeouts": sum(r["task_outcome"] == "timeout" for r in scored),
        "unverified": len(counted["unverified"]),
        "endpoint_failures": {kind: len(counted[kind]) for kind in FAILURE_KINDS},
        "errors": len(counted["error"]), "cancelled": len(counted["cancelled"]),
        "success_rate": passed / len(scored) if scored else None,
        "success_rate_ci": list(wilson_interval(passed, len(scored))) if scored else None,
        "success_rate_denominator": DENOMINATOR,
        "tool_call_errors": tool_errors,
        "tasks_without_scored_rollouts": len(by_task) - len(tasks),
        "pass_k": pass_k_table(tasks) if tasks else None,
    }


def usage_camel(usage: dict) -> dict:
    """:func:`agent_usage` with camelCase keys (the ``agent`` block of ``/v1`` metrics)."""
    def camel(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(p.title() for p in rest)

    def convert(value):
        if isinstance(value, dict):
            return {camel(k): convert(v) for k, v in value.items()}
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value

    return convert(usage)


def evaluation_results(evaluation: Evaluation) -> list[dict]:
    """Every rollout's result in (example, rollout) order; rollouts a cancellation left unrun are listed with
    ``stop_condition: cancelled``."""
    episodes = list(evaluation.episodes.select_related("workload").order_by("workload__index", "index"))
    results = [result_of(e, evaluation.run_id) for e in episodes]
    if evaluation.status == EvaluationStatus.CANCELLED:
        recorded = {(e.workload.index, e.index) for e in episodes}
        for w in evaluation.workloads.order_by("index"):
            results += [_not_run(evaluation.run_id, w, i) for i in range(w.episodes) if (w.index, i) not in recorded]
        results.sort(key=lambda r: (r["example_id"], int(r["rollout_id"].rsplit("_", 1)[1])))
    return results


def status_document(evaluation: Evaluation, *, deliveries: bool = True) -> dict:
    """The seed-004 status document of an evaluation, with the extensions ``usage``, ``summary``, ``error``,
    ``warnings``,
    ``dashboard_url`` and (``deliveries``) ``webhook`` with its delivery log. The webhook body is this document
    without ``webhook``, so every attempt sends the same bytes."""
    workloads = list(evaluation.workloads.order_by("index"))
    results = evaluation_results(evaluation)
    recorded = {(r["example_id"], int(r["rollout_id"].rsplit("_", 1)[1])) for r in results}
    current_episode, current_task = _current(evaluation, recorded)
    agent = evaluation.config.get("agent") or {}
    doc = {
        "run_id": str(evaluation.run_id), "status": STATUS_WORDS[evaluation.status],
        "progress": {"completed_rollouts": evaluation.completed_episodes, "total_rollouts": evaluation.total_episodes,
                     "current_episode_id": current_episode, "current_task_id": current_task},
        "env_id": env_id_of(evaluation, workloads),
        "model": agent.get("model") or (", ".join(sorted({w.model_ref for w in workloads})) or None),
        "started_at": _iso(evaluation.started_at), "completed_at": _iso(evaluation.finished_at),
        "evaluation_id": evaluation.public_id, "run_output_path": f"outputs/runs/{evaluation.run_id}",
        "evaluations": [{"id": evaluation.public_id, "results": results}],
        "error": evaluation.error_message or None, "warnings": list(evaluation.warnings or []),
        "usage": agent_usage(results), "summary": agent_summary(results), "dashboard_url": f"{settings.PUBLIC_URL}{evaluation.get_absolute_url()}",
    }
    if deliveries:
        doc["webhook"] = {"url": evaluation.webhook_url or None, "deliveries": [
            {"attempt": d.attempt, "webhook_id": d.webhook_id, "status_code": d.status_code, "error": d.error or None,
             "duration_ms": d.duration_ms, "at": _iso(d.at), "next_attempt_at": _iso(d.next_attempt_at)}
            for d in evaluation.webhook_deliveries.all()]}
    return doc


def agent_metrics(evaluation: Evaluation) -> dict | None:
    """The ``agent`` block of ``/v1`` metrics (camelCase :func:`agent_usage`); call it for evaluations with agent
    rollouts."""
    return usage_camel(agent_usage(evaluation_results(evaluation)))


def _iso(value) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None
