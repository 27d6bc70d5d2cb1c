"""Summary statistics of per-tuple violations, per check and across checks."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel


class MetricStats(BaseModel):
    """Statistics of one metric over one check's tuples (keys of the paper's stats files kept)."""

    label: str
    metric: str
    threshold: float
    num_samples_including_errors: int
    num_samples: int
    num_violations: int
    fraction_violated: float | None
    avg_violation: float | None
    median_violation: float | None
    ci95: tuple[float, float] | None  # bootstrap percentile interval of the mean


def summarize(
    values: np.ndarray,
    *,
    label: str,
    metric: str,
    threshold: float,
    n_errors: int = 0,
    bootstrap: int = 1000,
    seed: int = 0,
) -> MetricStats:
    """A violation counts when it exceeds ``threshold`` (0.01 nats for arbitrage, γσ for frequentist)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    empty = n == 0
    return MetricStats(
        label=label,
        metric=metric,
        threshold=threshold,
        num_samples_including_errors=n + n_errors,
        num_samples=n,
        num_violations=int((values > threshold).sum()),
        fraction_violated=None if empty else float((values > threshold).mean()),
        avg_violation=None if empty else float(values.mean()),
        median_violation=None if empty else float(np.median(values)),
        ci95=None if empty else bootstrap_mean_ci(values, bootstrap, seed),
    )


def bootstrap_mean_ci(
    values: np.ndarray,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    weights: np.ndarray | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the (``weights``-weighted) mean, in memory-bounded blocks of resamples.

    The one interval of a mean score everywhere (run summaries, ``cc report``, ``cc leaderboard``): a percentile
    bootstrap stays inside the range of the scores (a Brier interval never goes below 0), needs no normality of
    skewed per-question scores, and with the same values gives the same interval in every command.
    """
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n == 1 or resamples <= 0:
        return float(values.mean()), float(values.mean())
    w = None if weights is None else np.asarray(weights, dtype=float)
    rng = np.random.default_rng(seed)
    block = max(1, 2_000_000 // n)
    parts = []
    for s in range(0, resamples, block):
        idx = rng.integers(0, n, size=(min(block, resamples - s), n))
        if w is None:
            parts.append(values[idx].mean(axis=1))
        else:
            drawn = w[idx]
            total = drawn.sum(axis=1)
            parts.append(np.where(total > 0, (values[idx] * drawn).sum(axis=1) / np.where(total > 0, total, 1), np.nan))
    means = np.concatenate(parts)
    lo, hi = np.nanquantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
