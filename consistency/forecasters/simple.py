"""Reference forecasters that need no model: baselines and sanity checks for a benchmark."""

from __future__ import annotations

import hashlib

from ..models import Forecast, ForecastingQuestion
from .base import Forecaster


class ConstantForecaster(Forecaster):
    """Always ``p``: perfectly consistent on NEGATION only when p = 0.5, a useful floor."""

    name = "constant"

    def __init__(self, p: float = 0.5) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be a probability in [0, 1], got {p}")
        self.p = p

    @property
    def label(self) -> str:
        return f"constant_{self.p:g}"

    async def forecast(self, question: ForecastingQuestion) -> Forecast:
        return Forecast(prob=self.p)


class UniformForecaster(Forecaster):
    """A uniform random probability per question, a function of (seed, question id).

    Keyed on the question rather than on call order, so reruns, resumed runs and concurrent
    runs give the same numbers.
    """

    name = "uniform"

    def __init__(self, seed: int = 0, low: float = 0.0, high: float = 1.0) -> None:
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"need 0 <= low <= high <= 1, got low={low}, high={high}")
        self.seed, self.low, self.high = seed, low, high

    async def forecast(self, question: ForecastingQuestion) -> Forecast:
        digest = hashlib.sha256(f"{self.seed}|{question.id}|{question.title}".encode()).digest()
        unit = int.from_bytes(digest[:8], "big") / 2**64
        return Forecast(prob=self.low + (self.high - self.low) * unit)
