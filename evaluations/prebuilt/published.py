"""The catalog's published LIBERO success rates, per model and suite, each with its source (the reproduction
verdicts' references: ``models.PublishedScore``, rewritten on every ``migrate``). Fractions; ``episodes`` where the
source gives them (LIBERO's protocol: 50 init states × 10 tasks = 500 per suite).

Models the platform runs are named by their catalog reference; the others by the label an openpi endpoint or an
organization's model is given (``{"model": "pi05", "endpoint": {…}}``).
"""

from __future__ import annotations

__all__ = ["PUBLISHED", "SUITES"]

SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")


def _rows(model: str, source: str, rates: tuple[float, float, float, float], episodes: int | None = 500) -> list[dict]:
    return [{"model": model, "benchmark": suite, "success_rate": rate, "episodes": episodes, "source": source}
            for suite, rate in zip(SUITES, rates)]


PUBLISHED: list[dict] = [
    *_rows("prebuilt/smolvla/libero", "SmolVLA (0.45B), Shukor et al. 2025, arXiv:2506.01844, LIBERO table",
           (0.90, 0.96, 0.92, 0.71)),
    *_rows("openvla", "OpenVLA fine-tuned on LIBERO, Kim et al. 2024, arXiv:2406.09246 (as in arXiv:2502.19645 Table I)",
           (0.847, 0.884, 0.792, 0.537)),
    *_rows("openvla-oft", "OpenVLA-OFT, Kim, Finn & Liang 2025, arXiv:2502.19645 Table I", (0.976, 0.984, 0.979, 0.945)),
    *_rows("pi0", "π0, Physical Intelligence openpi README, LIBERO benchmark table", (0.968, 0.988, 0.958, 0.852)),
    *_rows("pi0-fast", "π0-FAST, Physical Intelligence openpi README, LIBERO benchmark table", (0.964, 0.968, 0.886, 0.602)),
    *_rows("pi05", "π0.5, Physical Intelligence openpi README, LIBERO benchmark table", (0.988, 0.982, 0.980, 0.924)),
    *_rows("prebuilt/libero-expert", "measured here: bench/bench_libero_expert.py, 50 init states × 10 tasks per suite "
           "(docs/using/libero-expert.md, issue 27)", (0.996, 0.996, 1.0, 0.996)),
]
