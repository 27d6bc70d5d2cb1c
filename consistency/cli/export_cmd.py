"""``cc export inspect``: a ``cc`` run as an inspect log, for inspect's viewer (``inspect view``);
``cc export forecastbench``: a run as a ForecastBench forecast set (:mod:`.fb_export_cmd`, added by the
command table)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .console import err, escape, fmt, out, pct
from .options import Epsilon

app = typer.Typer(help="Write a run in another tool's format.", no_args_is_help=True)


@app.command("inspect")
def inspect_log(
    run: Annotated[Path, typer.Argument(help="A run directory (or any directory of <Checker>.jsonl forecast files).")],
    output: Annotated[Path, typer.Option("--out", "-o", help="The log to write: LOG.eval or LOG.json.")],
    epsilon: Epsilon = 1e-3,
) -> None:
    """Write RUN's forecasts as an inspect log of task consistency/all, scored as the inspect task scores."""
    from ..integrations.inspect.logs import export_run
    from ..metrics.scoring import ScoreParams

    metrics = export_run(run, output, ScoreParams(epsilon=epsilon))
    out.print(
        f"{int(metrics['scored'])} tuples: arbitrage avg {fmt(metrics.get('arbitrage_mean'))}, "
        f"violated {pct(metrics.get('arbitrage_violated'))}; frequentist avg {fmt(metrics.get('frequentist_mean'))}, "
        f"violated {pct(metrics.get('frequentist_violated'))}"
    )
    err.print(f"inspect log written to [bold]{escape(str(output))}[/bold] (open it with `inspect view`)")
