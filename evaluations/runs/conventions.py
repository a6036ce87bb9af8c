"""The first-action check of a shard (``domain.conventions`` says what counts): before its first episode is scored,
the model is called on the first observation of up to ``PROBES`` of the shard's episodes, and its actions are judged
against the env's action space and declared gripper.

An error ends the shard's workload there: every episode of the shard is recorded as not run (no verdict, no rate)
and the shard fails with the error, which names the model, the task, ``action`` and both shapes; the evaluation then
fails with it. Warnings go to the evaluation's ``warnings`` (once each) and its log, and the episodes run.

Calling the model changes no episode: each probe resets the env with the episode's own seed (which fixes the episode
whatever ran before) in a session of its own, which the episode never shares. Skipped for the random baseline (it
samples the action space) and agent rollouts (an endpoint's calls cost its owner). A probe the model or env breaks
(an exception) is skipped, its servers started afresh: the episode meets the same failure and records it.
"""

from __future__ import annotations

from ..choices import LogLevel
from ..domain.conventions import PROBES, Findings, contract_error, judge_first_actions
from ..prebuilt.catalog import declared_gripper
from .lifecycle import add_warnings, log
from .outcome import close_quietly

__all__ = ["check_first_actions"]


def _who(runner) -> str:
    w = runner.workload
    return f"{w.model_ref} on {w.env_ref} {w.task_id}"


class Refused(Exception):
    """A first prediction rlmesh refused because the action does not fit the env's action space."""


def first_actions(runner, seeds: list[int]) -> tuple[list, list, object]:
    """``(actions, observations, action space)``: the model's action on the first observation of each seed. Raises
    :class:`Refused` (its words a finding) for an action that does not fit the env's action space, anything else
    the model or env raised."""
    import rlmesh

    actions, observations, space = [], [], None
    for seed in seeds:
        env_client = None
        try:
            env_client, model = runner.clients(seed, numpy_env=True)
            space = env_client.action_space
            with rlmesh.session(model, env_client) as session:
                obs, _ = session.reset(seed=seed)
                try:
                    actions.append(session.predict(obs))
                except Exception as exc:
                    refused = contract_error(str(exc), space, _who(runner))
                    if refused:
                        raise Refused(refused) from exc
                    raise
                observations.append(obs)
        finally:
            close_quietly(env_client)
    return actions, observations, space


def check_first_actions(runner, todo: list[int]) -> Findings | None:
    """Run the check for a shard about to run the episode indices ``todo`` (its servers started); its findings, with
    the warnings already added to the evaluation and logged, or None when the check does not apply or a probe
    failed."""
    if runner.random_model or runner.agent or not todo:
        return None
    seeds = [runner.workload.seed_for(i) for i in todo[:PROBES]]
    try:
        runner.ensure_servers()
        actions, observations, space = first_actions(runner, seeds)
    except Refused as exc:
        log(runner.evaluation, f"first-action check: {exc}", level=LogLevel.ERROR, shard=runner.shard)
        return Findings(errors=[str(exc)])
    except Exception as exc:  # noqa: BLE001 - the episode meets the same failure and records it
        log(runner.evaluation, f"first-action check skipped: {runner.described(exc)}", level=LogLevel.WARNING,
            shard=runner.shard)
        runner.close()  # a server the probe left hung or broken starts afresh for the episode, as after an error
        return None
    try:
        findings = judge_first_actions(actions, observations, space, who=_who(runner),
                                       gripper=declared_gripper(runner.workload.env_version))
    except Exception as exc:  # noqa: BLE001 - an action the rules cannot read is the episodes' to meet, not a crash
        log(runner.evaluation, f"first-action check skipped: {type(exc).__name__}: {exc}", level=LogLevel.WARNING,
            shard=runner.shard)
        return None
    for error in findings.errors:
        log(runner.evaluation, f"first-action check: {error}", level=LogLevel.ERROR, shard=runner.shard)
    new = add_warnings(runner.evaluation, findings.warnings) if findings.warnings else []
    for warning in new:
        log(runner.evaluation, f"first-action check: {warning}", level=LogLevel.WARNING, shard=runner.shard)
    return findings
