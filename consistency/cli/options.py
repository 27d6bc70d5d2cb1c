"""Options several commands share: the library's documented types (:mod:`consistency.fields`) with their
flags, and ``--json``, which only printing knows. Light to import, so that ``--help`` stays fast. The LLM
options are in :mod:`.llm_command`, those of the long-table commands in :mod:`.table_options`."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import fields
from .declared import option

AsJson = Annotated[bool, typer.Option("--json", help="Print as JSON.")]
Forecaster = option(fields.ForecasterSpec, "--forecaster", "-f")
ForecasterOptions = option(fields.ForecasterOptionItems, "--forecaster-option", "-F")
Checks = option(fields.CheckNames, "--checks", "-c")
Concurrency = option(fields.Concurrency)
Epsilon = option(fields.Epsilon)
Bootstrap = option(fields.Resamples)
BootstrapSeed = option(fields.BootstrapSeed, "--seed")
