"""The consistency lens (no outcomes needed): pure functions of forecast arrays, vectorised over many
tuples; :mod:`.forecast_files` applies them to forecast files and runs (``cc score``). The accuracy
lens is :mod:`consistency.accuracy`."""

from .arbitrage import DEFAULT_EPSILON, ArbitrageResult, arbitrage, clip_forecasts
from .categorical import categorical_arbitrage
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
    "categorical_arbitrage",
    "clip_forecasts",
    "frequentist",
    "summarize",
]
