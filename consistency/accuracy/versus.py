"""Consistency versus accuracy: does a forecaster's inconsistency predict its Brier score?

Following the consistency-checks paper (section 4, Table 1): across forecasters, the Pearson
correlation between each check's mean violation (arbitrage or frequentist) and the mean Brier
score, and the same for the mean over checks; forecasters worse than always-0.5 (Brier > 0.25)
are left out by default, as the paper does, since they would flatter the correlation. The
per-question version (paper appendix J) correlates, over questions, the violations of the tuples
built around each question with that question's Brier score. Intervals come from a bootstrap
over the paired items (forecasters or questions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .inputs import ScoreInputError


@dataclass(frozen=True)
class Correlation:
    r: float  # Pearson correlation (NaN when undefined: fewer than 3 items or no variance)
    low: float  # bootstrap percentile interval
    high: float
    n: int


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row pair of ``x`` and ``y`` (shape (B, n)); NaN without variance."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    denom = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (xc * yc).sum(axis=-1) / denom, np.nan)


def _ranks(a: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank), for Spearman's rho."""
    from scipy.stats import rankdata

    return rankdata(a, axis=-1)


def correlate(
    x, y, *, bootstrap: int = 1000, seed: int = 0, level: float = 0.95, spearman: bool = False
) -> Correlation:
    """Pearson (or, with ``spearman``, Spearman rank) correlation of paired values with a percentile bootstrap
    interval; each bootstrap resample is ranked afresh."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ScoreInputError(f"paired values must be two 1-D arrays of one length, got {x.shape} and {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(x)
    if n < 3:
        return Correlation(np.nan, np.nan, np.nan, n)
    rank = _ranks if spearman else (lambda a: a)
    r = float(pearson_rows(rank(x[None]), rank(y[None]))[0])
    idx = np.random.default_rng(seed).integers(0, n, size=(bootstrap, n))
    rs = pearson_rows(rank(x[idx]), rank(y[idx]))
    rs = rs[np.isfinite(rs)]
    if len(rs) == 0:
        return Correlation(r, np.nan, np.nan, n)
    low, high = np.quantile(rs, [(1 - level) / 2, (1 + level) / 2])
    return Correlation(r, float(low), float(high), n)


def consistency_vs_brier(
    violations: Mapping[str, Mapping[str, float]],
    brier: Mapping[str, float],
    *,
    checks: Sequence[str] | None = None,
    max_brier: float | None = 0.25,
    bootstrap: int = 1000,
    seed: int = 0,
) -> dict[str, Correlation]:
    """Per check (and ``"aggregate"``, the mean over checks): correlation across forecasters.

    ``violations[forecaster][check]`` is that forecaster's mean violation on the check (one
    metric); ``brier[forecaster]`` its mean Brier score. Forecasters missing either are skipped.
    """
    names = [f for f in violations if f in brier and (max_brier is None or brier[f] <= max_brier)]
    if len(names) < 3:
        raise ScoreInputError(
            f"need at least 3 forecasters with both consistency and Brier scores (Brier <= {max_brier}); "
            f"got {len(names)}: {', '.join(names) or 'none'}"
        )
    checks = list(checks or sorted({c for f in names for c in violations[f]}))
    table = np.array([[violations[f].get(c, np.nan) for c in checks] for f in names], dtype=float)
    b = np.array([brier[f] for f in names], dtype=float)
    out = {c: correlate(table[:, j], b, bootstrap=bootstrap, seed=seed) for j, c in enumerate(checks)}
    out["aggregate"] = correlate(np.nanmean(table, axis=1), b, bootstrap=bootstrap, seed=seed)
    return out
