"""``cc diff RUN_A RUN_B``: did run B get less consistent (or less accurate) than run A?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..evaluation.diff_options import DiffOptions
from .console import err, escape, fmt, out, print_skipped, say, table
from .declared import options_from
from .exits import ExitCode
from .options import AsJson


@options_from(
    DiffOptions,
    "options",
    flags={"resamples": "--bootstrap", "top": ("--top", "-n")},
    names={"resamples": "bootstrap"},
    hide_default=("min_shared",),
)
def diff(
    run_a: Annotated[Path, typer.Argument(help="The reference run directory (e.g. the last run of main).")],
    run_b: Annotated[Path, typer.Argument(help="The run to compare against it.")],
    fail_if_worse: Annotated[
        bool,
        typer.Option(
            "--fail-if-worse",
            help="Exit 1 when B is significantly worse than A (overall at --level, or a check at --level / checks), "
            "or when a check of A cannot be compared: B shares none of its tuples, or fewer than --min-shared.",
        ),
    ] = False,
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


def _print(result) -> None:
    what = "Brier score" if result.a.kind == "ground_truth" else f"{result.metric} violation"
    columns = ("check", "n", "A", "B", "B − A", f"{100 * (1 - result.level):g}% CI", "p", "better/worse/same", "")
    rows = []
    for name, d in [*result.groups.items(), ("overall", result.overall)]:
        cut = result.level if name == "overall" else result.level / max(1, len(result.groups))
        verdict = "[red]worse[/red]" if d.significantly_worse(cut, result.test) else ""
        verdict = verdict or ("[green]better[/green]" if d.significantly_better(cut, result.test) else "")
        interval = "-" if d.ci_low is None else f"[{d.ci_low:+.4f}, {d.ci_high:+.4f}]"
        rows.append(
            (
                escape(name) if name != "overall" else "[bold]overall[/bold]",
                d.n,
                fmt(d.mean_a),
                fmt(d.mean_b),
                "-" if d.diff is None else f"{d.diff:+.4f}",
                interval,
                f"{d.p(result.test):.3g}",
                f"{d.better}/{d.worse}/{d.same}",
                verdict,
            )
        )
    title = f"mean {what} (lower is better), B − A, p of the paired {result.test} test"
    grid = table(title, columns, rows, left=("check", ""), box="SIMPLE_HEAD", title_justify="left")
    out.print(f"A: {escape(str(result.a.path))} ({escape(result.a.label)})")
    out.print(f"B: {escape(str(result.b.path))} ({escape(result.b.label)})")
    for note in result.notes:
        out.print(f"[yellow]note[/yellow]: {escape(note)}")
    out.print(grid)
    if result.changed:
        out.print("[bold]changed most[/bold]")
    say((line for c in result.changed for line in c.lines()), out)
