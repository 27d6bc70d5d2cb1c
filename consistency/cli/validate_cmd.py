"""``cc validate``: tell what each file holds and report every bad line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from ..files import jsonl_files, validate_file
from .console import err, escape, out, say
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
        failed = failed or bool(report.errors)
        say(report.lines(max_errors), out)
    raise typer.Exit(ExitCode.FAILED if failed else ExitCode.OK)
