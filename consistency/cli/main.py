"""The ``cc`` application: the root options, and every command of :data:`consistency.cli.COMMANDS`."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from .. import __version__
from ..llm.secrets import redact_record
from . import COMMANDS
from .exits import epilog
from .lazy import LazyTyper

app = LazyTyper(
    name="cc",
    help="Evaluate forecasters by the logical consistency of their forecasts.",
    epilog=epilog(),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(verbose: Annotated[bool, typer.Option("--verbose", "-V", help="Log what the library does.")] = False) -> None:
    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(redact_record)  # logs never show a key (httpx logs request URLs, passwords included)


def version() -> None:
    """Print the package version."""
    typer.echo(f"consistency {__version__}")


for _name, _target in COMMANDS.items():
    app.lazy(_name, _target)
