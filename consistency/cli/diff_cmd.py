"""``cc diff RUN_A RUN_B``: did run B get less consistent (or less accurate) than run A?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..evaluation.diff_options import DiffOptions, FailIfWorse
from .console import err, escape, fmt, out, print_skipped, say, table
from .declared import option, options_from
from .exits import ExitCode
from .options import AsJson


@options_from(
    DiffOptions,
    "options",
    flags={"resamples": "--bootstrap", "top": ("--top", "-n")},
    hide_default=("min_shared",),
)
def diff(
    run_a: Annotated[Path, typer.Argument(help="The reference run directory (e.g. the last run of main).")],
    run_b: Annotated[Path, typer.Argument(help="The run to compare against it.")],
    fail_if_worse: option(FailIfWorse, "--fail-if-worse") = False,
    as_json: AsJson = False,
    *,
    options: DiffOptions,
) -> None:
    """Compare two runs on the tuples (or resolved questions) both scored: mean violation (or Brier score) of
    each, the paired difference B − A with a bootstrap interval and a paired test, and what changed most."""
    from ..evaluation.diff import diff_runs

    result = diff_runs(run_a, run_b, options)
    worse, uncompared = result.worse(), result.not_comparable()
    if as_json:
        out.print_json(json.dumps(result.to_dict()))
    else:
        _print(result)
    for run in (result.a, result.b):
        print_skipped(run.skipped, None, f"line(s) of {run.path} skipped")
    label = "[red]not comparable[/red]" if fail_if_worse else "[yellow]note[/yellow]: too few to test"
    for sentence in uncompared:
        err.print(f"{label}: {escape(sentence)}")
    if worse:
        err.print(f"[red]worse[/red]: B is significantly worse than A on {', '.join(worse)}")
    if fail_if_worse and result.failures():
        raise typer.Exit(ExitCode.FAILED)


_VERDICT = {"worse": "[red]worse[/red]", "better": "[green]better[/green]", "": ""}


def _print(result) -> None:
    title, columns, rows = result.table()
    rows = [
        ("[bold]overall[/bold]" if name == "overall" else escape(name), n, fmt(a), fmt(b), *rest, _VERDICT[v])
        for name, n, a, b, *rest, v in rows
    ]
    grid = table(title, columns, rows, left=("check", ""), box="SIMPLE_HEAD", title_justify="left")
    out.print(f"A: {escape(str(result.a.path))} ({escape(result.a.label)})")
    out.print(f"B: {escape(str(result.b.path))} ({escape(result.b.label)})")
    for note in result.notes:
        out.print(f"[yellow]note[/yellow]: {escape(note)}")
    out.print(grid)
    if result.changed:
        out.print("[bold]changed most[/bold]")
    say((line for c in result.changed for line in c.lines()), out)
