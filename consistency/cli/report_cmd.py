"""``cc report``: one self-contained HTML page from run directories, ``cc score`` outputs and published data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .console import escape, fmt, out, say, table
from .progress import working

if TYPE_CHECKING:
    from ..report.repair_section import RepairComparison


def report(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Run directories, `cc score` outputs, published forecast or ground-truth directories; "
            "NAME=PATH names the forecaster (runs sharing a name are paired).",
            show_default=False,
        ),
    ],
    out_file: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    top: Annotated[int, typer.Option("--top", "-n", min=0, help="Worst tuples written out per check.")] = 5,
    png: Annotated[
        Path | None, typer.Option("--png", help="Also write every figure into this directory as PNG and SVG.")
    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="The page's title.")] = None,
    diff: Annotated[
        bool, typer.Option("--diff", help="Add a section comparing the second PATH to the first, as `cc diff`.")
    ] = False,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Add a section: the first PATH's forecasts as given and Brier-repaired (joint, per tuple; computed "
            "with no model call): violations, Brier where resolved, model calls.",
        ),
    ] = False,
    arbitrage_run: Annotated[
        Path | None,
        typer.Option(
            "--arbitrage-run",
            help="An ArbitrageForecaster run over the same tuples, shown beside the repairs (implies --repair).",
        ),
    ] = None,
) -> None:
    """Write an HTML report: summary, consistency, accuracy and (for several runs) comparison, with figures."""
    import time

    from ..report import make_report

    start = time.perf_counter()
    with working(f"reading {len(paths)} path(s) and drawing the figures"):
        result = make_report(paths, out_file, top=top, png_dir=png, title=title, diff=diff, repair=repair,
                             arbitrage_run=arbitrage_run)  # fmt: skip
    if result.repairs is not None:
        _print_repairs(result.repairs)
    say((run.line() for run in result.runs), out)
    if result.figures:
        out.print(f"{len(result.figures)} figure file(s) written to {escape(str(png))}")
    seconds = time.perf_counter() - start
    out.print(
        f"report written to [bold]{escape(str(result.path))}[/bold] ({result.size / 1e6:.2f} MB, {seconds:.1f} s)"
    )


def _print_repairs(result: RepairComparison) -> None:
    rows = [
        ("mean violation", *[fmt(c.overall) for c in result.contenders]),
        ("Brier where resolved", *[fmt(c.brier) for c in result.contenders]),
        ("resolved forecasts", *[c.resolved for c in result.contenders]),
        ("model calls", *["-" if c.calls is None else c.calls for c in result.contenders]),
    ]
    names = [escape(c.name) for c in result.contenders]
    out.print(
        table("Repair versus ArbitrageForecaster (violations in nats; lower is better)", ["", *names], rows, fold=names)
    )
    say((f"note: {note}" for note in result.notes), out)
