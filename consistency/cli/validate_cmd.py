"""``cc validate``: tell what each file holds and report every bad line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from ..files import jsonl_files, validate_file
from .console import err, escape, out
from .errors import report as report_error
from .exits import ExitCode


def validate(
    paths: Annotated[
        list[Path], typer.Argument(help="JSONL files (or directories of them): questions, tuples, forecasts, results.")
    ],
    check: Annotated[
        str | None, typer.Option("--check", "-c", help="Check of tuple/forecast files (default: detect).")
    ] = None,
    max_errors: Annotated[int, typer.Option(min=0, help="Print at most this many errors per file (0: all).")] = 0,
) -> None:
    """Validate JSONL files line by line; exit 1 if any line is bad."""
    files, problems = jsonl_files(paths)
    failed = bool(problems)
    for problem in problems:
        err.print(f"[red]error[/red] {escape(problem)}")
    for path in files:
        try:
            report = validate_file(path, check)
        except (InputError, OSError) as exc:  # one file that cannot be read: said, and the others still checked
            failed = bool(report_error(exc))
            continue
        what = f"{report.info.kind}" + (f" of {report.info.check.name}" if report.info.check else "")
        if report.errors:
            failed = True
            bad = f"{report.n_lines} lines, {report.n_bad_lines} bad"
            out.print(f"[red]✗[/red] {escape(str(path))}: {what}, {bad}", soft_wrap=True)
            shown = report.errors if max_errors <= 0 else report.errors[:max_errors]
            for e in shown:
                out.print(f"  {e}", markup=False, soft_wrap=True)
            if len(shown) < len(report.errors):
                out.print(f"  ... and {len(report.errors) - len(shown)} more")
        else:
            out.print(
                f"[green]✓[/green] {escape(str(path))}: {what}, {report.n_lines} lines, all valid", soft_wrap=True
            )
        if report.unknown_keys:
            out.print(
                f"  note: keys not in our model were kept: {', '.join(sorted(report.unknown_keys))}", markup=False
            )
    raise typer.Exit(ExitCode.FAILED if failed else ExitCode.OK)
