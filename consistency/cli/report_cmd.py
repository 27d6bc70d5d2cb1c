"""``cc report``: one self-contained HTML page from run directories, ``cc score`` outputs and published data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .console import err, escape, out


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
) -> None:
    """Write an HTML report: summary, consistency, accuracy and (for several runs) comparison, with figures."""
    import time

    from ..accuracy.inputs import ScoreInputError
    from ..files import DetectionError
    from ..metrics.forecast_files import ScoringError
    from ..report import ReportInputError, make_report

    start = time.perf_counter()
    try:
        with err.status(f"reading {len(paths)} path(s) and drawing the figures"):
            result = make_report(paths, out_file, top=top, png_dir=png, title=title)
    except (ReportInputError, ScoringError, ScoreInputError, DetectionError) as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except OSError as exc:
        from ..write_errors import cannot_read

        err.print(f"[red]error[/red] {escape(cannot_read(exc))}")
        raise typer.Exit(2) from None
    if diff:
        _add_diff(paths, result.path)
    for run in result.runs:
        problems = []
        if run.n_failures:
            problems.append(f"{run.n_failures} failed question(s)")
        if run.n_unscorable:
            problems.append(f"{run.n_unscorable} unscorable line(s)")
        note = f" [yellow]({', '.join(problems)})[/yellow]" if problems else ""
        out.print(f"{escape(run.name)}: {escape(run.source)}, {escape(str(run.path))}{note}")
    if result.figures:
        out.print(f"{len(result.figures)} figure file(s) written to {escape(str(png))}")
    seconds = time.perf_counter() - start
    out.print(
        f"report written to [bold]{escape(str(result.path))}[/bold] ({result.size / 1e6:.2f} MB, {seconds:.1f} s)"
    )


def _add_diff(paths: list[str], page: Path) -> None:
    from ..metrics.run_diff import diff_runs
    from ..report.diff_section import add_to_report, diff_html

    if len(paths) != 2:
        err.print(f"[red]error[/red] --diff compares two runs; {len(paths)} PATH(s) given")
        raise typer.Exit(2)
    a, b = (p.split("=", 1)[1] if "=" in p and not Path(p).exists() else p for p in paths)
    try:
        add_to_report(page, diff_html(diff_runs(a, b)))
    except (ValueError, OSError) as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
