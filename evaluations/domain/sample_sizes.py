"""How many episodes a task needs: the expected width of its success-rate interval, and the inverse.

The platform reports a task's success rate with a Wilson (1927) interval (``evaluations.domain.scoring.
wilson_interval``), so planning uses the same interval. The half-width expected at ``n`` episodes when the true
rate is ``p`` is the Wilson half-width at an observed rate of exactly ``p``:

    h(n, p) = z·sqrt(p(1−p)/n + z²/4n²) / (1 + z²/n) = z·sqrt(p(1−p)·n + z²/4) / (n + z²),

with ``z`` the two-sided normal quantile (1.96 at 95 %). ``h`` is largest at ``p = 0.5`` for every ``n``, so
the default ``p = 0.5`` is the worst case: enough episodes for any true rate. Pass an observed rate (from an
earlier evaluation of the same model and task, with enough episodes) for a tighter, less safe estimate.
At ``p = 0.5`` the formula reduces to ``h = (z/2)/sqrt(n + z²)``: Wilson needs ``z²/4h² − z²`` episodes,
about four fewer than Wald's ``z²/4h²`` (±10 pp: 93 episodes instead of Wald's 96.04 → 97; ±5 pp: 381
instead of 385).
"""

from __future__ import annotations

import functools
import math

from scipy import stats

__all__ = ["MIN_EPISODES_WARNING", "episodes_for_half_width", "sample_size_estimate", "success_interval_half_width"]

#: Fewer episodes than this on a task earns a warning: the 95 % interval is then wider than about ±20 pp.
MIN_EPISODES_WARNING = 20


@functools.lru_cache(maxsize=64)  # a pure function, called nine times per task of a preview
def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    return float(stats.norm.ppf(0.5 + confidence / 2))


def _check_p(p: float) -> None:
    if not 0 <= p <= 1:
        raise ValueError(f"p must lie in [0, 1], got {p}")


def success_interval_half_width(n: int, p: float = 0.5, confidence: float = 0.95) -> float:
    """Half-width of the Wilson interval expected at ``n`` episodes when the true success rate is ``p``.

    A fraction (0.05 is ±5 pp). See the module docstring for the formula and why ``p`` defaults to 0.5.
    Raises ValueError if ``n < 1``, ``p`` is outside [0, 1] or ``confidence`` outside (0, 1).
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    _check_p(p)
    z = _z(confidence)
    return z * math.sqrt(p * (1 - p) * n + z * z / 4) / (n + z * z)


def episodes_for_half_width(target: float, p: float = 0.5, confidence: float = 0.95) -> int:
    """The smallest number of episodes whose expected Wilson half-width is ≤ ``target`` (a fraction).

    E.g. 93 for ±10 pp and 381 for ±5 pp at ``p = 0.5`` and 95 %. The half-width falls strictly as ``n`` grows,
    so the answer is the larger root of ``target²(n + z²)² = z²(p(1−p)n + z²/4)``, rounded up and checked
    against :func:`success_interval_half_width`. Raises ValueError if ``target`` is outside (0, 1), ``p``
    outside [0, 1] or ``confidence`` outside (0, 1).
    """
    if not 0 < target < 1:
        raise ValueError(f"target half-width must lie in (0, 1), got {target}")
    _check_p(p)
    z2 = _z(confidence) ** 2
    if success_interval_half_width(1, p, confidence) <= target:
        return 1
    a, h2 = p * (1 - p), target * target
    b, c = 2 * h2 * z2 - z2 * a, h2 * z2 * z2 - z2 * z2 / 4
    n = max(1, math.ceil((-b + math.sqrt(b * b - 4 * h2 * c)) / (2 * h2)))
    # Floating point may land one off the integer boundary; settle it on the half-width itself.
    while n > 1 and success_interval_half_width(n - 1, p, confidence) <= target:
        n -= 1
    while success_interval_half_width(n, p, confidence) > target:
        n += 1
    return n


def sample_size_estimate(episodes: int, p: float = 0.5, confidence: float = 0.95) -> dict:
    """What a task's requested episode count buys, for the evaluation preview.

    Returns ``{"episodes", "p", "halfWidth", "episodesFor5pp", "episodesFor10pp", "warning"}``: the expected
    half-width at ``episodes`` (:func:`success_interval_half_width`), the episodes a ±5 pp and a ±10 pp
    interval need (:func:`episodes_for_half_width`), and a warning string when ``episodes`` is below
    ``MIN_EPISODES_WARNING`` (else None). Raises as :func:`success_interval_half_width`.
    """
    half = success_interval_half_width(episodes, p, confidence)
    warning = None
    if episodes < MIN_EPISODES_WARNING:
        warning = (
            f"{episodes} episode{'s are' if episodes != 1 else ' is'} fewer than {MIN_EPISODES_WARNING}: the success rate's "
            f"{confidence:.0%} interval will be about ±{half * 100:.0f} pp wide."
        )
    return {
        "episodes": episodes,
        "p": p,
        "halfWidth": half,
        "episodesFor5pp": episodes_for_half_width(0.05, p, confidence),
        "episodesFor10pp": episodes_for_half_width(0.10, p, confidence),
        "warning": warning,
    }
