"""Forecasters: subclass :class:`Forecaster` and implement one async method.

Built-ins are selectable by name: ``basic``, ``cot``, ``logprob``, ``constant``, ``uniform``, ``crowd``,
``replay`` and ``arbitrage``; a bare model spec (``gpt-4o``) means ``basic`` with that model, except the
bundled ``local`` one, which means ``logprob:local`` (``basic:local`` asks it to write a number).
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
from .logprob import LogprobForecaster
from .replay import ReplayForecaster
from .simple import ConstantForecaster, UniformForecaster

for _cls in (BasicForecaster, CoTForecaster, LogprobForecaster, ConstantForecaster, UniformForecaster):
    register_forecaster(_cls)
for _cls in (CrowdForecaster, ReplayForecaster, ArbitrageForecaster):
    register_forecaster(_cls)
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
    "LogprobForecaster",
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
