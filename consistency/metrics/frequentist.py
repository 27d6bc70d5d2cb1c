"""The frequentist metric (paper appendix E), derived from a check's condition S.

Under the null, a forecaster reports each probability with independent noise of variance
σ²·T(1-T). For a constraint g(F) = 0 the delta method gives Var g ≈ σ² Σ_i (∂g/∂F_i)² F_i(1-F_i),
so the violation is |g| / sqrt(Σ_i (∂g/∂F_i)² F_i(1-F_i) + β), independent of σ; a tuple
violates the check when that exceeds γσ. One-sided constraints (g <= 0) count only g > 0,
and a check with several constraints takes the largest violation, as the paper does for
AND and OR.

A categorical field's forecast is one draw of multinomial noise: Var(Σ_o d_o F_o) = σ² (Σ_o d_o² F_o - (Σ_o d_o F_o)²),
which for a yes/no field (columns F and 1 - F, gradient only on F) is the binomial d² F (1 - F) above. Two
categorical fields said to have the same distribution (NUMERIC_PARAPHRASE) are compared point by point, as CDFs
when their outcomes are ordered: |C_X - C_Y| / sqrt(C_X (1 - C_X) + C_Y (1 - C_Y) + β) at each point, the largest
counting (a weighted Kolmogorov-Smirnov statistic). The threshold γσ is one test's: the largest of many z-scores
(three thresholds, 201 CDF points) passes it by chance more often, so the flag is anti-conservative there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..checks.condition import Constraint, SameDistribution


@dataclass(frozen=True)
class FrequentistParams:
    beta: float = 1e-3  # keeps the denominator away from zero for forecasts of 0 or 1
    sigma: float = 0.05  # noise scale of the null hypothesis (n = 400 samples)
    gamma: float = 2.58  # standard deviations allowed (two-sided 99%)

    @property
    def threshold(self) -> float:
        return self.gamma * self.sigma


def frequentist(
    probs: np.ndarray,
    constraints: Sequence[Constraint | SameDistribution],
    fields: Sequence[str],
    beta: float = FrequentistParams.beta,
    groups: Mapping[str, slice] | None = None,
) -> np.ndarray:
    """Violation per tuple for ``probs`` of shape ``(N, len(fields))``; ``fields`` name the columns and ``groups``
    gives the columns of each categorical field (the others are yes/no)."""
    probs = np.asarray(probs, dtype=float)
    env = {name: probs[:, i] for i, name in enumerate(fields)}
    group_of = {col: g for g, sl in (groups or {}).items() for col in fields[sl]}
    out = np.zeros(len(probs))
    for constraint in constraints:
        if isinstance(constraint, SameDistribution):
            if groups and constraint.a in groups and constraint.b in groups:
                gap, a, b = constraint.compare(probs[:, groups[constraint.a]], probs[:, groups[constraint.b]])
            else:
                gap, a, b = constraint.gaps(env)
            z = np.abs(gap) / np.sqrt(a * (1.0 - a) + b * (1.0 - b) + beta)
            out = np.maximum(out, z.max(axis=1))
            continue
        g, grad = constraint.residual(env)
        var = np.zeros(len(probs))
        mean: dict[str, np.ndarray] = {}
        for name, d in grad.items():
            p = env[name]
            group = group_of.get(name)
            if group is None:
                var = var + d * d * p * (1.0 - p)
            else:  # multinomial: Σ d² F now, minus (Σ d F)² per field below
                var = var + d * d * p
                mean[group] = mean.get(group, 0.0) + d * p
        for m in mean.values():
            var = var - m * m
        excess = np.abs(g) if constraint.equality else np.maximum(g, 0.0)
        out = np.maximum(out, excess / np.sqrt(np.maximum(var, 0.0) + beta))
    return out
