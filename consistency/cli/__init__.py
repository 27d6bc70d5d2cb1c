"""The ``cc`` command line: thin commands over the library, printing with rich.

Commands are registered by location (``app.lazy("name", "module_cmd:function")``, or
``"module_cmd:app"`` for a Typer group) and imported only when invoked: see :mod:`.lazy`.
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from .. import __version__
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
        handler.addFilter(_redact_record)


def _redact_record(record: logging.LogRecord) -> bool:
    """Logs never show a key (httpx logs request URLs, passwords included); imported on first use."""
    from ..llm.secrets import redact_record

    return redact_record(record)


app.lazy("evaluate", "evaluate_cmd:evaluate_cmd")
app.lazy("generate", "generate_cmd:generate_cmd")
app.lazy("questions", "questions_cmd:app")
app.lazy("score", "score_cmd:score")
app.lazy("validate", "validate_cmd:validate")
app.lazy("checks", "checks_cmd:checks")
app.lazy("ask", "ask_cmd:ask")
app.lazy("leaderboard", "leaderboard_cmd:leaderboard")
app.lazy("compare", "compare_cmd:compare")
app.lazy("correlate", "correlate_cmd:correlate")
app.lazy("proxy", "proxy_cmd:proxy")
app.lazy("cache", "cache_cmd:app")
app.lazy("batches", "batches_cmd:batches")
app.lazy("arbitrage", "arbitrage_cmd:app")
app.lazy("report", "report_cmd:report")
app.lazy("attack", "attack_cmd:attack_cmd")
app.lazy("export", "export_cmd:app")
app.lazy("diff", "diff_cmd:diff")
app.lazy("repair", "repair_cmd:repair")


@app.command("version")
def version() -> None:
    """Print the package version."""
    typer.echo(f"consistency {__version__}")
