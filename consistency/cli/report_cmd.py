"""``cc report``: one self-contained HTML page from run directories, ``cc score`` outputs and published data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..report import make_report
from .console import escape, fmt, out, say, table
from .declared import options_from
from .progress import working

if TYPE_CHECKING:
    from ..report.repair_section import RepairComparison

_FLAGS = {"out": ("--out", "-o"), "top": ("--top", "-n"), "png_dir": "--png", "diff": "--diff", "repair": "--repair"}


@options_from(make_report, "call", flags=_FLAGS, build=dict)
def report(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Run directories, `cc score` outputs, published forecast or ground-truth directories; "
            "NAME=PATH names the forecaster (runs sharing a name are paired).",
            show_default=False,
        ),
    ],
    *,
    call: dict[str, Any],
) -> None:
    """Write an HTML report: summary, consistency, accuracy and (for several runs) comparison, with figures."""
    import time

    start = time.perf_counter()
    with working(f"reading {len(paths)} path(s) and drawing the figures"):
        result = make_report(paths, **call)
    if result.repairs is not None:
        _print_repairs(result.repairs)
    say((run.line() for run in result.runs), out)
    if result.figures:
        out.print(f"{len(result.figures)} figure file(s) written to {escape(str(call['png_dir']))}")
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
