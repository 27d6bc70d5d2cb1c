"""Paired comparison of two runs on the same items: is B worse than A, or only different by chance?

Pure and vectorised: arrays of per-item scores in (lower is better: violations, Brier scores), the
paired difference B − A out, with a seeded bootstrap interval of its mean (items resampled as pairs,
stratified by group so each check weighs the same as in a run's aggregate), the exact two-sided sign
test and the Wilcoxon signed-rank test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

#: Differences this small are ties (violations are computed in floating point).
TIE = 1e-12


@dataclass(frozen=True)
class PairedDiff:
    """One group's (or the overall) comparison; ``diff`` is mean(B) − mean(A), positive when B is worse."""

    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    better: int  # items where B scores lower than A
    worse: int
    same: int
    p_sign: float
    p_wilcoxon: float

    def p(self, test: str) -> float:
        return self.p_sign if test == "sign" else self.p_wilcoxon

    def significantly_worse(self, level: float, test: str = "wilcoxon") -> bool:
        return self.diff is not None and self.diff > 0 and self.worse > self.better and self.p(test) < level

    def significantly_better(self, level: float, test: str = "wilcoxon") -> bool:
        return self.diff is not None and self.diff < 0 and self.better > self.worse and self.p(test) < level

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sign_test(better: int, worse: int) -> float:
    """Exact two-sided sign test p-value: how surprising this split of non-tied pairs is under no change."""
    n, m = better + worse, min(better, worse)
    if n == 0:
        return 1.0
    k = np.arange(m, dtype=float)
    log_terms = np.concatenate([[0.0], np.cumsum(np.log((n - k) / (k + 1)))]) - n * math.log(2.0)  # log C(n, k) / 2^n
    top = log_terms.max()
    return float(min(1.0, 2.0 * math.exp(top) * np.exp(log_terms - top).sum()))


#: Up to this many non-tied differences without ties, the Wilcoxon p-value is exact (as scipy does).
EXACT_WILCOXON = 50


def wilcoxon_test(differences: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the non-tied differences (1.0 when all are ties).

    Exact for up to 50 differences without ties, else the normal approximation with the tie correction
    and no continuity correction (as scipy's ``wilcoxon(d, zero_method="wilcox")`` in those cases);
    written out because importing scipy.stats would double ``cc diff``'s start-up.
    """
    d = np.asarray(differences, dtype=float)
    d = d[np.abs(d) > TIE]
    n = d.size
    if n == 0:
        return 1.0
    magnitude = np.abs(d)
    _, inverse, counts = np.unique(magnitude, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # rank - 1 of each distinct magnitude's first item
    ranks = (first + (counts + 1) / 2.0)[inverse]
    t_plus = float(ranks[d > 0].sum())
    if n <= EXACT_WILCOXON and np.all(counts == 1):
        ways = np.zeros(n * (n + 1) // 2 + 1)
        ways[0] = 1.0
        for r in range(1, n + 1):  # subsets of {1..n} by their rank sum
            ways[r:] = ways[r:] + ways[:-r].copy()
        pmf = ways / ways.sum()
        t = round(t_plus)
        return float(min(1.0, 2.0 * min(pmf[: t + 1].sum(), pmf[t:].sum())))
    mean = n * (n + 1) / 4.0
    var = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(counts**3 - counts)) / 48.0
    if var <= 0:
        return 1.0
    z = abs(t_plus - mean) / math.sqrt(var)
    return float(math.erfc(z / math.sqrt(2.0)))


def resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``resamples`` resamples (with replacement) of ``values``, in blocks of about 2 million indices."""
    n = len(values)
    out = np.empty(resamples)
    block = max(1, 2_000_000 // n)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        out[start:stop] = values[rng.integers(0, n, size=(stop - start, n), dtype=np.int32)].mean(axis=1)
    return out


def _interval(means: np.ndarray, level: float) -> tuple[float, float]:
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def _summary(x: list[np.ndarray], y: list[np.ndarray], low: float | None, high: float | None) -> PairedDiff:
    if not x:
        return PairedDiff(0, None, None, None, None, None, 0, 0, 0, 1.0, 1.0)
    d = np.concatenate([b - a for a, b in zip(x, y, strict=True)])
    better, worse = int(np.sum(d < -TIE)), int(np.sum(d > TIE))
    return PairedDiff(
        n=int(d.size),
        mean_a=float(np.mean([a.mean() for a in x])),
        mean_b=float(np.mean([b.mean() for b in y])),
        diff=float(np.mean([(b - a).mean() for a, b in zip(x, y, strict=True)])),
        ci_low=low,
        ci_high=high,
        better=better,
        worse=worse,
        same=int(d.size) - better - worse,
        p_sign=sign_test(better, worse),
        p_wilcoxon=wilcoxon_test(d),
    )


def paired_diffs(
    a: Sequence[np.ndarray], b: Sequence[np.ndarray], *, resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[list[PairedDiff], PairedDiff]:
    """Each group's comparison, and the overall one (the mean of group means, groups resampled apart).

    One bootstrap serves both: the overall interval averages the groups' resampled means.
    """
    x = [np.asarray(v, dtype=float) for v in a]
    y = [np.asarray(v, dtype=float) for v in b]
    for u, v in zip(x, y, strict=True):
        if u.shape != v.shape:
            raise ValueError(f"paired scores must have the same shape, got {u.shape} and {v.shape}")
    rng = np.random.default_rng(seed)
    draws = [
        resampled_means(v - u, resamples, rng) if resamples > 0 and u.size else None for u, v in zip(x, y, strict=True)
    ]
    groups = []
    for u, v, means in zip(x, y, draws, strict=True):
        point = float((v - u).mean()) if u.size else None
        low, high = _interval(means, level) if means is not None else (point, point)
        groups.append(_summary([u], [v], low, high) if u.size else _summary([], [], None, None))
    kept = [k for k, u in enumerate(x) if u.size]
    if not kept:
        return groups, _summary([], [], None, None)
    if resamples > 0:
        low, high = _interval(np.mean([draws[k] for k in kept], axis=0), level)
    else:
        low = high = float(np.mean([(y[k] - x[k]).mean() for k in kept]))
    return groups, _summary([x[k] for k in kept], [y[k] for k in kept], low, high)


def paired_diff(
    a: Sequence[np.ndarray] | np.ndarray,
    b: Sequence[np.ndarray] | np.ndarray,
    *,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> PairedDiff:
    """Compare paired scores: one array, or one per group (then the mean is the mean of group means)."""
    if isinstance(a, np.ndarray):
        a, b = [a], [b]  # type: ignore[list-item]
    return paired_diffs(a, b, resamples=resamples, seed=seed, level=level)[1]  # type: ignore[arg-type]
