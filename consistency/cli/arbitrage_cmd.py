"""``cc arbitrage replay``: recompute ArbitrageForecaster call trees with the exact solver."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from .console import err, escape, out
from .exits import ExitCode

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
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Recompute every node from its children; compare with the stored values, per depth."""
    from rich.table import Table

    from ..forecasters.arbitrage.replay import ReplayError, replay

    try:
        results = replay(path, weights.value, write)
    except (ReplayError, OSError) as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from None
    if as_json:
        out.print_json(json.dumps({"weights": weights.value, "files": [r.as_dict() for r in results]}))
        return
    table = Table(title=f"Call trees recomputed with the exact solver ({weights.value} weights)")
    for name in (
        "file",
        "depth",
        "nodes",
        "max |recomputed - stored|",
        "negative-profit steps",
        "viol. stored",
        "viol. recomputed",
    ):
        table.add_column(name, justify="left" if name == "file" else "right")
    for r in results:
        if not r.forecasts:
            table.add_row(escape(Path(r.path).name), "-", "0", "no call trees", "", "", "")
            continue
        for depth, s in sorted(r.by_depth.items()):
            d = s.as_dict()
            table.add_row(
                escape(Path(r.path).name),
                str(depth),
                str(d["nodes"]),
                f"{d['max_abs_diff']:.2e}",
                str(d["negative_profit_steps"]),
                f"{d['violation_stored']:.4f}",
                f"{d['violation_recomputed']:.4f}",
            )
    out.print(table)
    if write is not None:
        out.print(f"recomputed forecasts written to {escape(str(write))} (score them with cc score)")
