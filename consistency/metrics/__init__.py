"""The consistency lens (no outcomes needed): pure functions of forecast arrays, vectorised over many
tuples (no file is read or written here); :mod:`consistency.evaluation.scoring` applies them to forecast
files and runs (``cc score``). The accuracy lens is :mod:`consistency.accuracy`."""

from .arbitrage import DEFAULT_EPSILON, ArbitrageResult, arbitrage, clip_forecasts
from .frequentist import FrequentistParams, frequentist
from .stats import MetricStats, bootstrap_mean_ci, summarize

#: A tuple fails the arbitrage check when the guaranteed profit exceeds this (nats).
ARBITRAGE_THRESHOLD = 0.01

__all__ = [
    "ARBITRAGE_THRESHOLD",
    "DEFAULT_EPSILON",
    "ArbitrageResult",
    "FrequentistParams",
    "MetricStats",
    "arbitrage",
    "bootstrap_mean_ci",
    "clip_forecasts",
    "frequentist",
    "summarize",
]
