"""ForecastBench in and out: its question, resolution and forecast sets read as published, its
leaderboard's scoring reproduced, and forecast sets written that its validation accepts.

Names are imported on first use (the command line imports this package for every ``cc``
command that touches ForecastBench).
"""

from __future__ import annotations

from typing import Any

from ..names import lazy_exports

_WHERE = {
    "ForecastBenchError": "formats",
    "Problem": "formats",
    "HORIZONS": "formats",
    "MARKET_SOURCES": "formats",
    "DATASET_SOURCES": "formats",
    "RowKey": "keys",
    "key_of": "keys",
    "question_id": "keys",
    "Loaded": "importing",
    "load": "importing",
    "Imported": "reader",
    "import_set": "reader",
    "Validation": "validate",
    "validate_forecast_set": "validate",
    "combination_lines": "combination",
}

__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    return _lazy(name)


_lazy = lazy_exports(__name__, {name: f".{module}" for name, module in _WHERE.items()})
