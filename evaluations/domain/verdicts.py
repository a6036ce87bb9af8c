"""The verdict of an agent rollout: one rule for every place that says whether a rollout passed and where it counts.

A rollout has a verdict only when something was measured: it ran, neither the endpoint nor the env broke it, and a
check decided it (the page's reward, the shop's state checks, the run's judge). Without that evidence its
``task_passed`` and ``reward`` are null, it is counted by its reason, and it enters no success rate, pass@k,
pass^k or interval. With it, a timeout (the page's timer, the wall-time cap) is a failure whatever the checks saw
(the seed's ``task_outcome: timeout``).

===========================  ================  ===========  ==========  =========================
reason                       ``task_outcome``  task_passed  reward      counted as
===========================  ================  ===========  ==========  =========================
passed its checks            ``pass``          true         measured    ``scored``
failed its checks            ``fail``          false        measured    ``scored``
timed out, checks decided    ``timeout``       false        measured    ``scored``
no verifier and no judge     ``unverified``    null         null        ``unverified``
  (also when it timed out)
endpoint gave up (429)       ``error``         null         null        ``rate_limited``
endpoint gave up (other)     ``error``         null         null        ``endpoint_unavailable``
env / platform error,        ``error``         null         null        ``error``
  servers never started
cancelled before it ran      ``error``         null         null        ``cancelled``
===========================  ================  ===========  ==========  =========================

"measured" is the recorded reward clamped at 0 (MiniWoB's −1 becomes 0). Only ``scored`` rollouts make the success
rate's denominator and pass@k's n. The recorder writes the episode by this rule
(:class:`evaluations.runs.transcripts.TranscriptRecorder`), so ``/v1`` scores, comparisons and the dashboard, which
read ``Episode.success`` of completed episodes, agree with the ``/agents`` status built from it
(:mod:`evaluations.reports.agents`). Pure functions of plain values; no ORM.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COUNTED_AS", "Verdict", "rollout_verdict"]

#: Where a rollout is counted (the ``/agents`` result's ``counted_as``), in the summary's order.
COUNTED_AS = ("scored", "unverified", "rate_limited", "endpoint_unavailable", "error", "cancelled")


@dataclass(frozen=True)
class Verdict:
    """``outcome`` (the seed's ``task_outcome``), ``passed`` (``task_passed``), ``reward`` (≥ 0, or None) and
    ``counted_as`` (one of :data:`COUNTED_AS`)."""

    outcome: str
    passed: bool | None
    reward: float | None
    counted_as: str

    @property
    def scored(self) -> bool:
        """Whether the rollout enters the success rate, pass@k / pass^k and their intervals."""
        return self.counted_as == "scored"


def _no_verdict(outcome: str, counted_as: str) -> Verdict:
    return Verdict(outcome, None, None, counted_as)


def rollout_verdict(*, ran: bool = True, errored: bool = False, endpoint_failure: str | None = None,
                    timed_out: bool = False, success: bool | None = None,
                    reward: float | None = None) -> Verdict:
    """The verdict of one rollout (rules and table in the module docstring).

    ``ran``: False for a rollout a cancellation left unrun; ``errored``: the episode ended in an error (its record's
    status ``error``); ``endpoint_failure``: ``rate_limited`` / ``endpoint_unavailable`` when the endpoint ended it
    (wins over ``errored``); ``timed_out``: the page's timer or the wall-time cap ended it; ``success``: the checks'
    verdict (None: nothing decided); ``reward``: the recorded return (None: none).
    """
    if not ran:
        return _no_verdict("error", "cancelled")
    if endpoint_failure:
        return _no_verdict("error", endpoint_failure)
    if errored:
        return _no_verdict("error", "error")
    if success is None:
        return _no_verdict("unverified", "unverified")
    measured = None if reward is None else max(float(reward), 0.0)
    if timed_out:
        return Verdict("timeout", False, measured, "scored")
    return Verdict("pass" if success else "fail", bool(success), measured, "scored")
