"""``cc report``: one self-contained HTML page from run directories, ``cc score`` outputs and published data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from .console import escape, fmt, out, table
from .progress import working


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
        result = make_report(paths, out_file, top=top, png_dir=png, title=title)
    if diff:
        _add_diff(paths, result.path)
    if repair or arbitrage_run is not None:
        _add_repair(paths[0], arbitrage_run, result.path)
    for run in result.runs:
        problems = [f"{run.n_failures} failed question(s)"] if run.n_failures else []
        problems += [f"{run.n_unscorable} unscorable line(s)"] if run.n_unscorable else []
        note = f" [yellow]({', '.join(problems)})[/yellow]" if problems else ""
        out.print(f"{escape(run.name)}: {escape(run.source)}, {escape(str(run.path))}{note}")
    if result.figures:
        out.print(f"{len(result.figures)} figure file(s) written to {escape(str(png))}")
    seconds = time.perf_counter() - start
    out.print(
        f"report written to [bold]{escape(str(result.path))}[/bold] ({result.size / 1e6:.2f} MB, {seconds:.1f} s)"
    )


def _path(spec: str) -> str:
    """The path of a ``NAME=PATH`` argument (a path that exists as given is a path, ``=`` and all)."""
    return spec.split("=", 1)[1] if "=" in spec and not Path(spec).exists() else spec


def _add_diff(paths: list[str], page: Path) -> None:
    from ..evaluation.diff import diff_runs
    from ..report.diff_section import add_to_report, diff_html

    if len(paths) != 2:
        raise InputError(f"--diff compares two runs; {len(paths)} PATH(s) given")
    add_to_report(page, diff_html(diff_runs(*map(_path, paths))))


def _add_repair(first: str, arbitrage_run: Path | None, page: Path) -> None:
    from ..report.diff_section import add_to_report
    from ..report.repair_section import compare_repairs, repair_html

    try:
        result = compare_repairs(_path(first), arbitrage_run)
    except InputError as exc:
        raise InputError(f"--repair: {exc}") from None
    add_to_report(page, repair_html(result))
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
    for note in result.notes:
        out.print(f"[yellow]note[/yellow]: {escape(note)}")
