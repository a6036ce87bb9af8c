"""Whether a success rate measured here reproduces a published one: the verdict every score row of a model with a
published number carries. Pure (no Django).

Our rate's 95 % Wilson interval (Wilson 1927) is set against the published value:

* **below** / **above**: the published value lies outside the interval (above its high end / below its low end):
  decided at any number of episodes;
* **reproduced**: the published value lies inside, and the interval is narrow enough to mean it: its half-width is at
  most ``tolerance`` (5 pp by default; the LIBERO protocol's 500 episodes per suite reach ±2.6 pp at 90 %);
* **undecided**: inside, but wider than that. ``episodesToDecide`` says how many judged episodes in all would make the
  interval that narrow if the model truly scored the published rate (``sample_sizes.episodes_for_half_width``), and
  how many more that is than were run.
"""

from __future__ import annotations

from .sample_sizes import episodes_for_half_width
from .scoring import wilson_interval

__all__ = ["TOLERANCE", "VERDICTS", "reproduction_verdict"]

#: The widest half-width (a fraction) at which "inside the interval" counts as reproduced.
TOLERANCE = 0.05
VERDICTS = ("reproduced", "below", "above", "undecided")


def reproduction_verdict(published: float, successes: int, judged: int, *, tolerance: float = TOLERANCE,
                         confidence: float = 0.95) -> dict:
    """The verdict on our ``successes`` of ``judged`` episodes against the ``published`` success rate (a fraction).

    Returns ``{"verdict", "interval": [low, high], "halfWidth", "episodesToDecide", "moreEpisodes"}``: the verdict
    (:data:`VERDICTS`, the module docstring), our Wilson interval in [0, 1] and its half-width, and for
    ``undecided`` the judged episodes that would decide in all and how many more than ``judged`` (both None
    otherwise). ValueError if ``judged < 1``, ``successes`` outside [0, judged], ``published`` outside [0, 1] or
    ``tolerance`` outside (0, 1).
    """
    if judged < 1:
        raise ValueError(f"judged must be at least 1, got {judged}")
    if not 0 <= successes <= judged:
        raise ValueError(f"successes must lie in [0, {judged}], got {successes}")
    if not 0.0 <= published <= 1.0:
        raise ValueError(f"published must be a fraction in [0, 1], got {published}")
    if not 0.0 < tolerance < 1.0:
        raise ValueError(f"tolerance must lie in (0, 1), got {tolerance}")
    low, high = wilson_interval(successes, judged, confidence)
    half = (high - low) / 2
    out = {"verdict": "reproduced", "interval": [low, high], "halfWidth": half, "episodesToDecide": None,
           "moreEpisodes": None}
    if published > high:
        out["verdict"] = "below"
    elif published < low:
        out["verdict"] = "above"
    elif half > tolerance:
        needed = episodes_for_half_width(tolerance, published, confidence)
        out.update(verdict="undecided", episodesToDecide=max(needed, judged + 1), moreEpisodes=max(needed - judged, 1))
    return out
