"""Agent rollouts: what each step sent and got back, kept as a transcript, and the rollout's summary fields.

An agent workload (its env's scenario declares ``tools``) always runs the explicit session loop
(:mod:`evaluations.runs.session`) with a :class:`TranscriptRecorder` as its step hook. The transcript is an ordered
list of typed, timed events, in the manner of Inspect AI's sample transcripts (STYLE §6):

- ``reset``: the episode began (``seed``, ``goal``).
- ``observation`` (per step, step 0 after reset): ``text`` as the agent was shown it (the message contract of
  :mod:`evaluations.agents.observation`, or the raw JSON with ``use_wrapper: false``) and ``screenshot`` (a PNG file
  beside the transcript) when one was sent.
- ``model``: the bridge's ``trace`` of the endpoint call: ``request`` (key redacted; chat ``messages`` hold only the
  messages new in this call, ``messages_before`` counts the earlier ones), ``reply``, ``latencyMs`` (waiting on the
  answer used), ``retryMs`` (failed attempts and backoff; ``backoffMs``, ``retryAfterMs``, ``failures``),
  ``usage`` (:func:`~evaluations.agents.transport.read_usage`; null: the reply carried none, counted as missing),
  ``attempts``, ``error``, ``overheadMs``; plus ``predictMs`` as the platform measured it.
- ``tool``: the call executed (``tool``, ``arguments``), the env's ``result`` and ``error``, ``stepMs``, ``reward``.
- ``error``: an unusable reply (``kind: invalid_call`` with its ``code``: ``multiple_tool_calls``,
  ``unparsed_tool_call``, …, :data:`~evaluations.agents.tools.TOOL_CALL_ERRORS`), the endpoint failing for good
  (``kind: endpoint`` with ``failure``: ``rate_limited`` or ``endpoint_unavailable``), or the episode breaking
  (``exception``, with its traceback), or the episode's time running out during a model call (``kind: timeout``;
  the call's ``model`` event comes first when its answer came, and its action is never executed).
- ``judge`` (open runs judged by an endpoint): the judge call's ``request``, ``reply``, ``latencyMs``, ``usage``.
- ``score``: how it ended: ``reward``, ``rawReward``, ``passed`` (null: no verdict), ``outcome`` and ``countedAs``
  (:func:`~evaluations.domain.verdicts.rollout_verdict`), ``stopCondition`` (the status document's word:
  ``terminal_action``, ``max_steps``, ``timeout``, ``error``, ``rate_limited``, ``endpoint_unavailable``),
  ``verifiers``, and ``finalState`` (the shop's whole state after the last step; null for MiniWoB).

Every event has ``type``, ``step`` and ``t`` (seconds since the episode started). The file is JSON in Django's
storage (``Episode.transcript``); ``Episode.agent`` holds the summary (steps, tool calls, token usage and endpoint
time sums, how it ended) and ``Episode.verifiers`` the checks that decided the outcome. The endpoint key is
replaced by ``***`` in everything written.
"""

from __future__ import annotations

import io
import json
import time
import traceback
from typing import Any

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from ..agents.bridge import ALLOW_PRIVATE_ENV, KEY_ENV, redact
from ..agents.observation import first_user_message, raw_message, text_of, tool_message
from ..agents.tools import ENDPOINT_ERROR_TOOL
from ..agents.transport import FAILURE_KINDS, USAGE_FIELDS
from ..choices import EpisodeStatus, StopCondition
from ..crypto import SecretUnreadable, decrypt
from ..domain.text import nul_free
from ..domain.verdicts import rollout_verdict
from ..runtime.base import RuntimeBackendError
from .judging import decide, env_verifiers

__all__ = ["BRIDGE_SOURCE", "KEY_ENV", "TranscriptRecorder", "is_agent_workload", "model_secrets", "stop_condition_of"]

#: The endpoint bridge's source (prebuilt/agent-endpoint).
BRIDGE_SOURCE = "python://evaluations.agents.bridge:EndpointBridge"
#: Per-step timing sums kept in the rollout summary (ms; see the ``model`` event).
TIME_KEYS = ("endpointMs", "retryMs", "backoffMs", "retryAfterMs", "bridgeMs", "predictMs", "envMs")


def stop_condition_of(ending: str) -> str:
    """A rollout's stop condition as the status document names it (``stop_condition``), from its ``ending``: one
    name for each way a rollout stops, in the transcript as in the results (the wall-time cap is ``timeout``)."""
    if ending in FAILURE_KINDS or ending in ("error", "timeout", "max_steps"):
        return ending
    return "terminal_action"


def is_agent_workload(workload) -> bool:
    """Whether a workload is an agent's: its task is a scenario that declares tools, or its model is the bridge."""
    if workload.model_version is not None and workload.model_version.source == BRIDGE_SOURCE:
        return True
    env = workload.env_version
    scenario = env.scenario(workload.scenario) or env.scenario(workload.task_id) if env is not None else None
    return bool(scenario and scenario.get("tools"))


#: The openpi bridge's source (prebuilt/openpi-endpoint): a policy server named by a model entry's endpoint.
OPENPI_SOURCE = "python://evaluations.prebuilt.openpi.policy:OpenPIPolicy"


def model_secrets(evaluation, workload) -> dict[str, str]:
    """Environment variables only the platform names, for the model server: for the agent and openpi bridges, the
    operator's allowance for private targets (``ALLOW_PRIVATE_ENV``, always set, ``true`` or ``false``) and the
    endpoint key (the run's, or the workload's own for a policy server)."""
    source = workload.model_version.source if workload.model_version is not None else ""
    if source == OPENPI_SOURCE:
        out = {ALLOW_PRIVATE_ENV: "true" if settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS else "false"}
        if not workload.model_secret:
            return out
        try:
            return {**out, KEY_ENV: decrypt(workload.model_secret)}
        except SecretUnreadable as exc:
            raise RuntimeBackendError(f"the policy server's key cannot be used: {exc}") from None
    if source != BRIDGE_SOURCE:
        return {}
    out = {ALLOW_PRIVATE_ENV: "true" if settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS else "false"}
    if not evaluation.endpoint_key:
        return out
    try:
        return {**out, KEY_ENV: decrypt(evaluation.endpoint_key)}
    except SecretUnreadable as exc:
        raise RuntimeBackendError(f"the endpoint key cannot be used: {exc}") from None


def _png(image: Any) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _add_usage(total: dict, usage: dict) -> None:
    """Add one step's usage into ``total`` field by field; a field the step did not report stays as it was (None
    until some step reports it). Cached and reasoning tokens are parts of prompt and completion tokens, summed on
    their own, never added to them."""
    for k in USAGE_FIELDS:
        value = usage.get(k)
        if isinstance(value, int) and not isinstance(value, bool):
            total[k] = (total[k] or 0) + value


def _info(info: Any) -> dict:
    return dict(info) if isinstance(info, dict) else {}


class TranscriptRecorder:
    """The step hook of one agent rollout (see the module docstring). ``key`` is redacted from what it writes."""

    def __init__(self, *, evaluation, workload, index: int, key: str = ""):
        self.workload, self.index, self.key = workload, index, key
        self.base = f"transcripts/{evaluation.public_id}/w{workload.index:03d}-e{index:05d}"
        self.raw_json = workload.model_kwargs.get("use_wrapper") is False
        self.t0 = time.monotonic()
        self.events: list[dict] = []
        self.messages_seen = 0
        self.last_info: dict = {}
        self.endpoint_error: str | None = None
        self.endpoint_failure: str | None = None
        self.totals: dict[str, Any] = {"toolCalls": 0, "invalidCalls": 0, "toolCallErrors": {}, "actionErrors": 0,
                                       **dict.fromkeys(TIME_KEYS, 0.0), "calls": 0, "retryAfterCount": 0,
                                       "usage": dict.fromkeys(USAGE_FIELDS), "usageReported": False,
                                       "usageSteps": 0, "usageMissingSteps": 0}

    # -- events ------------------------------------------------------------------------------------
    def _event(self, event_type: str, step: int, **data: Any) -> None:
        self.events.append({"type": event_type, "step": step, "t": round(time.monotonic() - self.t0, 4), **data})

    def _observation(self, step: int, obs: Any) -> None:
        obs = obs if isinstance(obs, dict) else {"observation": obs}
        goal, dom, error = text_of(obs.get("goal")), text_of(obs.get("dom")), text_of(obs.get("error"))
        if self.raw_json:
            text = raw_message(text_of(obs.get("raw")), error)
        else:
            text = first_user_message(goal, dom) if step == 0 else tool_message(dom, error)
        shot = None
        if obs.get("screenshot") is not None:
            shot = f"step-{step:03d}.png"
            default_storage.save(f"{self.base}/{shot}", ContentFile(_png(obs["screenshot"])))
        self._event("observation", step, text=text, screenshot=shot)

    def on_reset(self, obs: Any, info: Any, *, seed: int) -> None:
        goal = text_of(obs.get("goal")) if isinstance(obs, dict) else ""
        self._event("reset", 0, seed=seed, goal=goal, at=time.time())
        self._observation(0, obs)

    def _model(self, step: int, trace: dict, predict_ms: float) -> None:
        request = dict(trace.get("request") or {})
        body = request.get("body")
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            messages = body["messages"]
            # Each chat call resends the whole conversation; keep only what is new in this one.
            before = min(self.messages_seen, len(messages))
            request["body"] = {**body, "messages": messages[before:], "messages_before": before}
            self.messages_seen = len(messages) + 1  # the assistant reply is in the next request
        usage = trace.get("usage") if isinstance(trace.get("usage"), dict) else None
        t = self.totals
        t["endpointMs"] += float(trace.get("latencyMs") or 0)
        t["retryMs"] += float(trace.get("retryMs") or trace.get("backoffMs") or 0)
        t["backoffMs"] += float(trace.get("backoffMs") or 0)
        t["retryAfterMs"] += float(trace.get("retryAfterMs") or 0)
        t["retryAfterCount"] += int(trace.get("retryAfterCount") or 0)
        t["bridgeMs"] += float(trace.get("overheadMs") or 0)
        t["calls"] += int(trace.get("attempts") or 0)
        if usage:
            _add_usage(t["usage"], usage)
            t["usageReported"] = True
            t["usageSteps"] += 1
        elif trace.get("reply") is not None:
            t["usageMissingSteps"] += 1  # an answer without usage: missing, never 0 tokens
        self._event("model", step, protocol=trace.get("protocol"), request=request, reply=trace.get("reply"),
                    latencyMs=trace.get("latencyMs"), usage=usage, attempts=trace.get("attempts"),
                    retryMs=trace.get("retryMs"), backoffMs=trace.get("backoffMs"),
                    retryAfterMs=trace.get("retryAfterMs"), failures=trace.get("failures") or [],
                    failure=trace.get("failure"), error=trace.get("error"), overheadMs=trace.get("overheadMs"),
                    predictMs=round(predict_ms, 3))

    def on_step(self, step: int, action: Any, obs: Any, reward: float, terminated: bool, truncated: bool, info: Any,
                *, predict_ms: float, step_ms: float) -> None:
        """Record step ``step`` (1-based): the model call behind ``action``, the tool call and the new page."""
        self.totals["predictMs"] += predict_ms
        self.totals["envMs"] += step_ms
        text = text_of(action)
        try:
            call = json.loads(text)
        except json.JSONDecodeError:
            call = None
        call = call if isinstance(call, dict) else {"tool": None, "error": f"not a JSON tool call: {text[:200]!r}"}
        if isinstance(call.get("trace"), dict):
            self._model(step, call.pop("trace"), predict_ms)
        info = self.last_info = _info(info)
        tool = call.get("tool")
        if tool == ENDPOINT_ERROR_TOOL:
            self.endpoint_error = str((call.get("arguments") or {}).get("message") or "endpoint error")
            self.endpoint_failure = "rate_limited" if call.get("failure") == "rate_limited" else "endpoint_unavailable"
            self._event("error", step, kind="endpoint", failure=self.endpoint_failure, message=self.endpoint_error)
        elif tool is None:
            code = str(call.get("error_code") or "no_tool_call")
            self.totals["invalidCalls"] += 1
            self.totals["toolCallErrors"][code] = self.totals["toolCallErrors"].get(code, 0) + 1
            self._event("error", step, kind="invalid_call", code=code,
                        message=str(call.get("error") or "no tool call"))
        else:
            self.totals["toolCalls"] += 1
        if tool != ENDPOINT_ERROR_TOOL:
            if info.get("error"):
                self.totals["actionErrors"] += 1
            self._event("tool", step, tool=tool, arguments=call.get("arguments"), result=info.get("tool_result"),
                        error=info.get("error") or None, stepMs=round(step_ms, 3), reward=float(reward),
                        terminated=bool(terminated), truncated=bool(truncated))
            self._observation(step, obs)

    def on_deadline(self, step: int, action: Any, *, predict_ms: float) -> None:
        """The episode's time ran out while the model was called for step ``step``: the call (when its answer came
        back, with its trace) and a ``timeout`` error are recorded; the action is never executed."""
        self.totals["predictMs"] += predict_ms
        try:
            call = json.loads(text_of(action))
        except json.JSONDecodeError:
            call = None
        if isinstance(call, dict) and isinstance(call.get("trace"), dict):
            self._model(step, call["trace"], predict_ms)
        self._event("error", step, kind="timeout", message="the episode's wall-time cap was reached during the model "
                    "call; its action was not executed")

    def on_error(self, exc: BaseException) -> None:
        """The episode broke (env or model failure): the error with its stack trace goes into the transcript."""
        self._event("error", len([e for e in self.events if e["type"] == "tool"]), kind="exception",
                    message=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-8000:])

    # -- the end ---------------------------------------------------------------------------------------
    def _ending(self, fields: dict) -> str:
        info = self.last_info
        if self.endpoint_error:
            return self.endpoint_failure or "endpoint_unavailable"
        if fields.get("status") == EpisodeStatus.ERROR:
            return "error"
        if info.get("timed_out") or fields.get("stop_condition") == StopCondition.WALL_TIME:
            return "timeout"
        if info.get("terminal_action"):
            return "finish"
        if info.get("page_ended"):
            return "page"
        if fields.get("truncated"):
            return "max_steps"
        return "terminated" if fields.get("terminated") else "other"

    def _verifiers(self, fields: dict, ending: str, raw: float) -> tuple[dict, list[dict], dict | None]:
        """``(fields, verifiers, judge trace)`` of a rollout that ran to its end: the env's own checks (the shop,
        else its judge, :func:`~evaluations.runs.judging.decide`), else MiniWoB's page reward."""
        verifiers = env_verifiers(self.last_info)
        if verifiers is None:
            ended = ending in ("finish", "page") or bool(self.last_info.get("timed_out"))
            return fields, [{"name": "page_reward", "kind": "page", "passed": ended and raw == 1.0, "score": raw,
                             "detail": "the page's own reward check (core.endEpisode): 1 pass, -1 fail, partial "
                             "between" if ended else "the page never ended the episode"}], None
        goal = next((e.get("goal") or "" for e in self.events if e["type"] == "reset"), "")
        return decide(fields, self.last_info, verifiers, evaluation=self.workload.evaluation, task=goal,
                      events=self.events)

    def finish(self, fields: dict) -> dict:
        """The Episode fields with the agent's: the transcript file, ``agent`` summary and ``verifiers``; an
        endpoint that stayed down makes the rollout an ``error`` with its reason. ``success`` and ``reward`` follow
        :func:`~evaluations.domain.verdicts.rollout_verdict`: null without evidence (an error, no check decided),
        ``success`` false for a timeout a check decided; an errored rollout has no verifiers (none decided it)."""
        ending = self._ending(fields)
        raw = float(self.last_info.get("raw_reward") or 0.0)
        fields = dict(fields)
        if self.endpoint_error:
            fields.update(status=EpisodeStatus.ERROR, stop_condition=StopCondition.ERROR,
                          error=self.endpoint_error[:4000])
        errored = fields.get("status") == EpisodeStatus.ERROR
        verifiers, judge = [], None
        if not errored:
            fields, verifiers, judge = self._verifiers(fields, ending, raw)
        verdict = rollout_verdict(errored=errored, endpoint_failure=self.endpoint_failure if self.endpoint_error
                                  else None, timed_out=ending == "timeout", success=fields.get("success"),
                                  reward=fields.get("reward"))
        if verdict.scored:
            fields["success"] = verdict.passed
        else:
            fields.update(success=None, success_source="", reward=None)
        if fields.get("error"):
            fields["error"] = redact(fields["error"], self.key)
        steps = sum(1 for e in self.events if e["type"] == "tool" or (e["type"] == "error" and e["kind"] == "endpoint"))
        summary = {**self.totals, "steps": steps, "ending": ending, "rawReward": raw,
                   "endpointError": self.endpoint_error, "endpointFailure": self.endpoint_failure,
                   "events": len(self.events)}
        for k in TIME_KEYS:
            summary[k] = round(summary[k], 3)
        if judge is not None:
            self._event("judge", steps, **judge)
        self._event("score", steps, reward=fields.get("reward"), rawReward=raw, passed=fields.get("success"),
                    outcome=verdict.outcome, countedAs=verdict.counted_as, stopCondition=stop_condition_of(ending),
                    ending=ending, verifiers=verifiers,
                    finalState=self.last_info.get("shop_state"))
        fields.update(agent=summary, verifiers=verifiers, transcript=self._save(fields, summary))
        return fields

    def _save(self, fields: dict, summary: dict) -> str:
        w = self.workload
        document = {"schema": "rlmesh.transcript.v1", "evaluation": w.evaluation.public_id,
                    "runId": str(w.evaluation.run_id), "task": w.task_id, "scenario": w.scenario,
                    "example": w.index, "rollout": self.index, "seed": fields.get("seed"), "model": w.model_ref,
                    "env": w.env_ref, "endpoint": (w.evaluation.config.get("agent") or {}).get("endpoint"),
                    "summary": summary, "events": self.events}
        text = redact(json.dumps(nul_free(document), ensure_ascii=False, default=str), self.key)
        return default_storage.save(f"{self.base}.json", ContentFile(text.encode("utf-8")))
