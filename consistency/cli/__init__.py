"""The ``cc`` command line: thin commands over the library, printing with rich."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from .. import __version__
from . import (
    ask_cmd,
    cache_cmd,
    checks_cmd,
    compare_cmd,
    correlate_cmd,
    evaluate_cmd,
    generate_cmd,
    leaderboard_cmd,
    questions_cmd,
    score_cmd,
    validate_cmd,
)

app = typer.Typer(
    name="cc",
    help="Evaluate forecasters by the logical consistency of their forecasts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(verbose: Annotated[bool, typer.Option("--verbose", "-V", help="Log what the library does.")] = False) -> None:
    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


app.command("evaluate")(evaluate_cmd.evaluate_cmd)
app.command("generate")(generate_cmd.generate_cmd)
app.add_typer(questions_cmd.app, name="questions")
app.command("score")(score_cmd.score)
app.command("validate")(validate_cmd.validate)
app.command("checks")(checks_cmd.checks)
app.command("ask")(ask_cmd.ask)
app.command("leaderboard")(leaderboard_cmd.leaderboard)
app.command("compare")(compare_cmd.compare)
app.command("correlate")(correlate_cmd.correlate)
app.add_typer(cache_cmd.app, name="cache")


@app.command("version")
def version() -> None:
    """Print the package version."""
    typer.echo(f"consistency {__version__}")
