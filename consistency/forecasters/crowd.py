"""A crowd: several forecasters asked concurrently, their probabilities pooled."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal

import numpy as np

from ..models import Forecast, ForecastingQuestion
from .base import Forecaster, ForecastError

Method = Literal["mean", "median", "extremized", "logit"]
METHODS: tuple[str, ...] = ("mean", "median", "extremized", "logit")


def pool(probs: np.ndarray, method: str = "mean", alpha: float = 2.5, eps: float = 1e-6) -> np.ndarray:
    """Aggregate along the last axis.

    ``extremized`` pushes the mean away from 1/2 in odds space, p^a / (p^a + (1-p)^a), because an
    average of partly independent forecasters is typically underconfident; ``logit`` averages
    log-odds (a geometric mean of odds).
    """
    p = np.clip(np.asarray(probs, dtype=float), eps, 1.0 - eps)
    if method == "mean":
        return np.asarray(probs, dtype=float).mean(axis=-1)
    if method == "median":
        return np.median(np.asarray(probs, dtype=float), axis=-1)
    if method == "extremized":
        m = p.mean(axis=-1)
        return m**alpha / (m**alpha + (1.0 - m) ** alpha)
    if method == "logit":
        z = np.log(p / (1.0 - p)).mean(axis=-1)
        return 1.0 / (1.0 + np.exp(-z))
    raise ValueError(f"unknown pooling method {method!r}; choose from {', '.join(METHODS)}")


class CrowdForecaster(Forecaster):
    """Asks every member; pools the forecasts of those that answer (at least ``quorum``)."""

    name = "crowd"

    def __init__(
        self, members: Sequence[Forecaster | str], method: Method = "mean", alpha: float = 2.5, quorum: int = 1
    ) -> None:
        from .loading import load_forecaster

        if method not in METHODS:
            raise ValueError(f"unknown pooling method {method!r}; choose from {', '.join(METHODS)}")
        self.members = [m if isinstance(m, Forecaster) else load_forecaster(m) for m in members]
        if not self.members:
            raise ValueError("a crowd needs at least one member")
        self.method, self.alpha, self.quorum = method, alpha, max(1, quorum)

    def children(self) -> Sequence[Forecaster]:
        return self.members

    @property
    def label(self) -> str:
        return f"crowd-{self.method}_{len(self.members)}"

    async def forecast(self, question: ForecastingQuestion) -> Forecast:
        outcomes = await asyncio.gather(*(m.forecast_safely(question) for m in self.members))
        probs = [o.forecast.prob for o in outcomes if o.forecast is not None]
        failed = [f"{m.label}: {o.error}" for m, o in zip(self.members, outcomes, strict=True) if o.error]
        if len(probs) < self.quorum:
            raise ForecastError(f"only {len(probs)} of {len(self.members)} members answered: {failed}")
        value = float(pool(np.array(probs), self.method, self.alpha))
        members = [
            {"name": m.label, "prob": o.forecast.prob if o.forecast else None}
            for m, o in zip(self.members, outcomes, strict=True)
        ]
        return Forecast(prob=min(1.0, max(0.0, value)), metadata={"members": members, "failed": failed})
