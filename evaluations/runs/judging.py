"""How an agent rollout's verdict is decided at its end, for envs that report their own verifiers (the shop):

1. the env's checks (``info["verifiers"]``, ``info["verdict"] == "state"``): the task's verifiers, or the ones an
   open run sent; success and reward are the env's (all checks pass; the fraction passed);
2. else (``verdict == "unverified"``) the run's judge (``Evaluation.config["agent"]["judge"]``, its key encrypted in
   ``Evaluation.judge_key``), asked once through :func:`evaluations.agents.judge.judge_rollout`: its verdict is
   recorded as a verifier of kind ``judge`` and decides success (reward 1 or 0, success source ``criterion``);
3. else the rollout stays unverified: ``success`` and ``reward`` null, never a guessed pass.

MiniWoB reports no ``verifiers`` in its info; :func:`env_verifiers` is then None and the recorder keeps its page
check. Called by :class:`evaluations.runs.transcripts.TranscriptRecorder` in the worker.
"""

from __future__ import annotations

from django.conf import settings

from ..agents.bridge import redact
from ..agents.judge import judge_rollout
from ..agents.transport import EndpointConfig
from ..choices import EpisodeStatus, SuccessSource
from ..crypto import SecretUnreadable, decrypt

__all__ = ["decide", "env_verifiers", "judge_config"]


def env_verifiers(info: dict) -> list[dict] | None:
    """The env's own verifier results from a step's info, or None when the env reports none (MiniWoB)."""
    if "verdict" not in info or not isinstance(info.get("verifiers"), list):
        return None
    return list(info["verifiers"])


def judge_config(evaluation) -> EndpointConfig | None:
    """The run's judge endpoint (with its key decrypted), or None when the run has no judge."""
    judge = ((evaluation.config or {}).get("agent") or {}).get("judge")
    if not judge or not judge.get("url"):
        return None
    try:
        key = decrypt(evaluation.judge_key)
    except SecretUnreadable:
        key = ""
    return EndpointConfig(url=judge["url"], model=judge.get("model") or None,
                          additional_params=dict(judge.get("additional_params") or {}),
                          timeout_seconds=float(settings.RLMESH_AGENT_CALL_TIMEOUT),
                          max_retries=int(settings.RLMESH_AGENT_CALL_RETRIES),
                          backoff_seconds=float(settings.RLMESH_AGENT_CALL_BACKOFF), key=key,
                          allow_private=bool(settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS))


def decide(fields: dict, info: dict, verifiers: list[dict], *, evaluation, task: str,
           events: list[dict]) -> tuple[dict, list[dict], dict | None]:
    """``(fields, verifiers, judge trace)`` once the rollout ended: the Episode fields with success, its source
    and the reward set by the rules of the module docstring. An errored rollout is left as it is."""
    if fields.get("status") == EpisodeStatus.ERROR or info.get("verdict") != "unverified":
        return fields, verifiers, None
    cfg = judge_config(evaluation)
    if cfg is None:
        return {**fields, "success": None, "success_source": "", "reward": None}, verifiers, None
    verifier, trace = judge_rollout(cfg, task=task, state=info.get("shop_state"), events=events)
    if cfg.key:  # the judge's key never reaches a record, even inside an error message
        verifier["detail"] = redact(verifier["detail"], cfg.key)
        trace["error"] = redact(trace["error"], cfg.key) if trace["error"] else None
    passed = verifier["passed"]
    fields = {**fields, "success": passed, "reward": None if passed is None else float(passed),
              "success_source": "" if passed is None else SuccessSource.CRITERION}
    return fields, [*verifiers, verifier], trace
