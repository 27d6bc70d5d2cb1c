"""Paired comparison of two runs on the same items: is B worse than A, or only different by chance?

Pure and vectorised: arrays of per-item scores in (lower is better: violations, Brier scores), the
paired difference B − A out, with a seeded bootstrap interval of its mean (items resampled as pairs,
stratified by group so each check weighs the same as in a run's aggregate), the exact two-sided sign
test and the Wilcoxon signed-rank test.
"""

from __future__ import annotations

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
    from scipy.stats import binom

    n = better + worse
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(better, worse), n, 0.5)))


def wilcoxon_test(differences: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the non-tied differences (1.0 when all are ties)."""
    d = np.asarray(differences, dtype=float)
    d = d[np.abs(d) > TIE]
    if d.size == 0:
        return 1.0
    from scipy.stats import wilcoxon

    return float(wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def stratified_bootstrap(
    groups: Sequence[np.ndarray], *, resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the mean of group means, each group's items resampled with replacement.

    Resamples are drawn in blocks that bound memory (about 2 million indices at once).
    """
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not groups:
        return float("nan"), float("nan")
    point = float(np.mean([g.mean() for g in groups]))
    if resamples <= 0 or all(len(g) == 1 for g in groups):
        return point, point
    rng = np.random.default_rng(seed)
    totals = np.zeros(resamples)
    for g in groups:
        n = len(g)
        block = max(1, 2_000_000 // n)
        for start in range(0, resamples, block):
            stop = min(resamples, start + block)
            totals[start:stop] += g[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    means = totals / len(groups)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def paired_diff(
    a: Sequence[np.ndarray] | np.ndarray,
    b: Sequence[np.ndarray] | np.ndarray,
    *,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> PairedDiff:
    """Compare paired scores: one array per group (the mean is the mean of group means), or one array."""
    if isinstance(a, np.ndarray):
        a, b = [a], [b]  # type: ignore[list-item]
    pairs = [(np.asarray(x, dtype=float), np.asarray(y, dtype=float)) for x, y in zip(a, b, strict=True)]
    for x, y in pairs:
        if x.shape != y.shape:
            raise ValueError(f"paired scores must have the same shape, got {x.shape} and {y.shape}")
    pairs = [(x, y) for x, y in pairs if x.size]
    if not pairs:
        return PairedDiff(0, None, None, None, None, None, 0, 0, 0, 1.0, 1.0)
    diffs = [y - x for x, y in pairs]
    d = np.concatenate(diffs)
    better, worse = int(np.sum(d < -TIE)), int(np.sum(d > TIE))
    low, high = stratified_bootstrap(diffs, resamples=resamples, seed=seed, level=level)
    return PairedDiff(
        n=int(d.size),
        mean_a=float(np.mean([x.mean() for x, _ in pairs])),
        mean_b=float(np.mean([y.mean() for _, y in pairs])),
        diff=float(np.mean([g.mean() for g in diffs])),
        ci_low=low,
        ci_high=high,
        better=better,
        worse=worse,
        same=int(d.size) - better - worse,
        p_sign=sign_test(better, worse),
        p_wilcoxon=wilcoxon_test(d),
    )
