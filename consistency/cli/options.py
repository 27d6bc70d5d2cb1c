"""Options several commands share, declared once each (an ``Annotated`` type per option; the default stays
in each command's signature). Light to import: typer only, so that ``--help`` stays fast. The
LLM options are in :mod:`.llm_options`, those of the long-table commands in :mod:`.table_options`."""

from __future__ import annotations

from typing import Annotated

import typer

AsJson = Annotated[bool, typer.Option("--json", help="Print as JSON.")]
Forecaster = Annotated[
    str,
    typer.Option(
        "--forecaster",
        "-f",
        help="basic, cot, logprob, constant, uniform, crowd, replay; a model (gpt-4o, openai/NAME, "
        "openrouter/VENDOR/NAME, URL::NAME: the basic forecaster with it; local: the bundled model, "
        "logprob:local); name:model (cot:gpt-4o, logprob:gpt-4o-mini, basic:local); "
        "arbitrage:SPEC (SPEC arbitraged, -F checks=neg,cond); file.py::Class or package.module:Class; "
        "a forecasting-tools bot: ft:bot.py::MyBot, ft:package.module:MyBot, ft:TemplateBot.",
    ),
]
ForecasterOptions = Annotated[
    list[str] | None,
    typer.Option("--forecaster-option", "-F", help="Forecaster option key=value (repeatable), e.g. -F p=0.3."),
]
Checks = Annotated[
    str | None, typer.Option("--checks", "-c", help="Comma-separated checks, e.g. cond,neg (default: all).")
]
Concurrency = Annotated[int, typer.Option(min=1, help="Questions forecast at once.")]
Epsilon = Annotated[
    float, typer.Option(min=0, max=0.5, help="Forecasts of exactly 0 or 1 are moved to ε / 1-ε for arbitrage.")
]
Bootstrap = Annotated[int, typer.Option(min=0, help="Bootstrap resamples for the 95% interval of each mean (0: none).")]
BootstrapSeed = Annotated[int, typer.Option("--seed", min=0, help="Seed of the bootstrap.")]
