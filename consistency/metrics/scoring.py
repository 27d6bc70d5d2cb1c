"""Every metric of a check's tuples at once, from an array of forecasts: the scores ``cc score`` records.

:func:`score_forecasts` takes an ``(N, fields)`` array and returns each tuple's arbitrage violation
(exact), its scaled form and the frequentist violation, with the parameters that produced them
(:class:`ScoreParams`) and their statistics. Files of forecasts are scored by
:mod:`consistency.evaluation.scoring`, which reads them and calls this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..checks import Check, get_check
from . import (
    ARBITRAGE_THRESHOLD,
    DEFAULT_EPSILON,
    ArbitrageResult,
    FrequentistParams,
    MetricStats,
    arbitrage,
    frequentist,
    summarize,
)

#: Metric keys of the paper's ``violation_data``, in its order.
METRICS = ("default", "default_scaled", "frequentist")


class ScoreParams(BaseModel):
    """Everything that changes a score; recorded with every result."""

    model_config = ConfigDict(allow_inf_nan=False)  # a NaN threshold would call nothing violated

    epsilon: float = DEFAULT_EPSILON
    arbitrage_threshold: float = ARBITRAGE_THRESHOLD
    scaled_threshold: float = ARBITRAGE_THRESHOLD / 2  # what the paper's published stats used
    beta: float = FrequentistParams.beta
    sigma: float = FrequentistParams.sigma
    gamma: float = FrequentistParams.gamma
    bootstrap: int = 1000
    seed: int = 0

    @property
    def frequentist_threshold(self) -> float:
        return self.gamma * self.sigma

    def threshold(self, metric: str) -> float:
        return {
            "default": self.arbitrage_threshold,
            "default_scaled": self.scaled_threshold,
            "frequentist": self.frequentist_threshold,
        }[metric]


@dataclass(frozen=True)
class CheckScores:
    """Every metric for N tuples of one check (rows in the order of ``probs``)."""

    check: Check
    probs: np.ndarray
    arbitrage: ArbitrageResult
    frequentist: np.ndarray
    params: ScoreParams

    def values(self, metric: str) -> np.ndarray:
        return {
            "default": self.arbitrage.violation,
            "default_scaled": self.arbitrage.scaled,
            "frequentist": self.frequentist,
        }[metric]

    def violation_data(self, i: int) -> dict[str, Any]:
        """Row ``i`` in the paper's ``violation_data`` layout, plus prices, gap and ε."""
        out: dict[str, Any] = {}
        for metric in METRICS:
            value = float(self.values(metric)[i])
            passed = not value > self.params.threshold(metric)
            entry: dict[str, Any] = {
                "metric": metric,
                "violation": value,
                "check": passed,
                "check_result": "Passed" if passed else "Failed",
                "successful_elicitation": True,
            }
            if metric != "frequentist":
                entry["arbitrage_prices"] = dict(
                    zip(self.check.field_names, self.arbitrage.prices[i].tolist(), strict=True)
                )
                entry["gap"] = float(self.arbitrage.gap[i])
                entry["epsilon"] = self.params.epsilon
            out[metric] = entry
        return out

    def stats(self, n_errors: int = 0) -> dict[str, MetricStats]:
        return {
            metric: summarize(
                self.values(metric),
                label=self.check.class_name,
                metric=metric,
                threshold=self.params.threshold(metric),
                n_errors=n_errors,
                bootstrap=self.params.bootstrap,
                seed=self.params.seed,
            )
            for metric in METRICS
        }


def score_forecasts(
    check: str | Check,
    probs: np.ndarray | Sequence[Sequence[float]],
    *,
    weights: np.ndarray | None = None,
    params: ScoreParams | None = None,
) -> CheckScores:
    """Score an ``(N, n_fields)`` array of probabilities, columns in the check's field order."""
    check = get_check(check)
    params = params or ScoreParams()
    probs = np.asarray(probs, dtype=float)
    if probs.ndim == 1:
        probs = probs[None, :]
    arb = arbitrage(probs, check.worlds, weights, epsilon=params.epsilon)
    freq = frequentist(probs, check.constraints, check.field_names, beta=params.beta)
    return CheckScores(check, probs, arb, freq, params)
