"""consistency: tell how good an LLM forecaster is today, from the logical consistency of its forecasts.

Imports are lazy so that the ``cc`` command starts fast (and can hand compiler invocations
to the real C compiler without loading numpy).
"""

from __future__ import annotations

from .names import deprecated_aliases, lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "Check": "consistency.checks",
    "get_check": "consistency.checks",
    "all_checks": "consistency.checks",
    "register": "consistency.checks",
    "ForecastingQuestion": "consistency.models",
    "Forecast": "consistency.models",
    "arbitrage": "consistency.metrics",
    "frequentist": "consistency.metrics",
    "score_forecasts": "consistency.metrics.scoring",
    "score_path": "consistency.evaluation.scoring",
    "Forecaster": "consistency.forecasters",
    "load_forecaster": "consistency.forecasters",
    "register_forecaster": "consistency.forecasters",
    "evaluate": "consistency.evaluation",
    "resume": "consistency.evaluation",
    "evaluate_questions": "consistency.evaluation.ground_truth",
}

__all__ = ["__version__", *_EXPORTS]


__getattr__ = lazy_exports(__name__, _EXPORTS)

#: Old module names (before the two lenses had one package each), kept importable with a DeprecationWarning.
deprecated_aliases(
    {"consistency.scoring": "consistency.metrics.forecast_files", "consistency.scores": "consistency.accuracy"}
)
