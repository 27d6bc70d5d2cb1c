"""``cc arbitrage replay``: recompute ArbitrageForecaster call trees with the exact solver."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from .console import escape, out, show, table
from .options import AsJson

app = typer.Typer(help="ArbitrageForecaster call trees (the paper's and ours).", no_args_is_help=True)


class Rule(StrEnum):
    paper = "paper"
    cf = "cf"
    equal = "equal"


@app.command("replay")
def replay_cmd(
    path: Annotated[
        Path, typer.Argument(help="A forecast file, or a directory of them, whose metadata holds call trees.")
    ],
    weights: Annotated[
        Rule,
        typer.Option(
            help="Weight rule: paper (accumulating), cf (the published code's, to reproduce its files), equal."
        ),
    ] = Rule.paper,
    write: Annotated[
        Path | None, typer.Option("--write", help="Write the files with every node recomputed bottom-up to DIR.")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Recompute every node from its children; compare with the stored values, per depth."""
    from ..forecasters.arbitrage.replay import FileReplay, replay

    results = replay(path, weights.value, write)
    rows = [(escape(row[0]), *row[1:]) for r in results for row in r.rows()]
    title = f"Call trees recomputed with the exact solver ({weights.value} weights)"
    show({"weights": weights.value, "files": [r.as_dict() for r in results]}, as_json,
         lambda: table(title, FileReplay.COLUMNS, rows))  # fmt: skip
    if as_json:
        return
    if write is not None:
        out.print(f"recomputed forecasts written to {escape(str(write))} (score them with cc score)")
