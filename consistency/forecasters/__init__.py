"""Forecasters: subclass :class:`Forecaster` and implement one async method.

Built-ins are selectable by name: ``basic``, ``cot``, ``constant``, ``uniform``, ``crowd``,
``replay`` and ``arbitrage``; a bare model spec (``gpt-4o``, ``local``) means ``basic`` with that model.
"""

from . import bots
from .arbitrage import ArbitrageForecaster
from .base import CallNote, Forecaster, ForecastError, ForecastOutcome, Occurrence, current_occurrence, note_call
from .bots import BotForecaster
from .crowd import CrowdForecaster, pool
from .llm import (
    BasicForecaster,
    CoTForecaster,
    ExtractedForecast,
    ForecastAnswer,
    LLMForecaster,
    ProbabilityAnswer,
    forecast_messages,
)
from .loading import (
    ForecasterSpecError,
    forecaster_class,
    forecaster_names,
    load_forecaster,
    register_forecaster,
    register_prefix,
    typed_options,
)
from .replay import ReplayForecaster
from .simple import ConstantForecaster, UniformForecaster

for _cls in (BasicForecaster, CoTForecaster, ConstantForecaster, UniformForecaster, CrowdForecaster, ReplayForecaster):
    register_forecaster(_cls)
register_forecaster(ArbitrageForecaster)
register_prefix("ft", bots.bot_forecaster_class, bots.adapt)  # the library is imported only when used

__all__ = [
    "ArbitrageForecaster",
    "BasicForecaster",
    "BotForecaster",
    "CallNote",
    "CoTForecaster",
    "ConstantForecaster",
    "CrowdForecaster",
    "ExtractedForecast",
    "ForecastAnswer",
    "ForecastError",
    "ForecastOutcome",
    "Forecaster",
    "ForecasterSpecError",
    "LLMForecaster",
    "Occurrence",
    "ProbabilityAnswer",
    "ReplayForecaster",
    "UniformForecaster",
    "current_occurrence",
    "forecast_messages",
    "forecaster_class",
    "forecaster_names",
    "load_forecaster",
    "note_call",
    "pool",
    "register_forecaster",
    "register_prefix",
    "typed_options",
]
