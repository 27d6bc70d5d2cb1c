"""The documented types of values several entry points take: one help text and one range each.

A library object that takes one of these (``Request.forecaster``, ``SearchOptions.concurrency``...) uses the
alias, and ``cc`` derives its options from the same declarations (``consistency/cli/declared.py``), so the
Python API and the command line describe a value in the same words. Light to import: ``cc --help`` reads it.
"""

from __future__ import annotations

from typing import Annotated

from annotated_doc import Doc
from annotated_types import Ge, Le

ForecasterSpec = Annotated[
    str,
    Doc(
        "basic, cot, logprob, constant, uniform, crowd, replay; a model (gpt-4o, openai/NAME, "
        "openrouter/VENDOR/NAME, URL::NAME: the basic forecaster with it; local: the bundled model, "
        "logprob:local); name:model (cot:gpt-4o, logprob:gpt-4o-mini, basic:local); "
        "arbitrage:SPEC (SPEC arbitraged, -F checks=neg,cond); file.py::Class or package.module:Class; "
        "a forecasting-tools bot: ft:bot.py::MyBot, ft:package.module:MyBot, ft:TemplateBot."
    ),
]
ForecasterOptionItems = Annotated[list[str] | None, Doc("Forecaster option key=value (repeatable), e.g. -F p=0.3.")]
CheckNames = Annotated[str | None, Doc("Comma-separated checks, e.g. cond,neg (default: all).")]
Concurrency = Annotated[int, Ge(1), Doc("Questions forecast at once.")]
Epsilon = Annotated[float, Ge(0), Le(0.5), Doc("Forecasts of exactly 0 or 1 are moved to ε / 1-ε for arbitrage.")]
Resamples = Annotated[int, Ge(0), Doc("Bootstrap resamples for the 95% interval of each mean (0: none).")]
BootstrapSeed = Annotated[int, Ge(0), Doc("Seed of the bootstrap.")]
Reasoning = Annotated[
    bool | None,
    Doc(
        "Ask for a justification with the probability. Default: as `cc evaluate`'s basic forecaster "
        "(yes, except for the bundled local model)."
    ),
]
