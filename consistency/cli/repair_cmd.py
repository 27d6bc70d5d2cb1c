"""``cc repair``: make a run's forecasts coherent after the fact, with no model call, and say what it gained."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..repair.options import RepairOptions
from ..store.layout import REPAIR_REPORT
from .console import err, escape, out, say, show, table
from .declared import options_from
from .errors import handle_errors
from .exits import ExitCode
from .options import AsJson

#: Said when a repair stops: the library removes its partial copy, so nothing is half-written.
UNTOUCHED = "nothing was written (the inputs are untouched); run the command again"


@handle_errors(after=lambda exc, _: UNTOUCHED if isinstance(exc, KeyboardInterrupt) else "nothing was written")
@options_from(
    RepairOptions,
    "options",
    hide_default=("joint",),
    flags={
        "joint": "--joint/--per-tuple",
        "out": ("--out", "-o"),
        "force": "--force",
        "skip_conflicts": "--skip-conflicts",
    },
)
def repair(
    path: Annotated[
        Path,
        typer.Argument(
            help="A run directory (cc evaluate, cc score) or a directory of <Checker>.jsonl forecasts (the paper's).",
            show_default=False,
        ),
    ],
    as_json: AsJson = False,
    *,
    options: RepairOptions,
) -> None:
    """Project the forecasts onto the coherent set (no model calls) and write a repaired run directory.

    The repaired forecasts score better than the originals in every possible world (Brier: by at least the
    squared distance moved; log: by the KL divergence moved, per tuple the arbitrage profit); where questions
    are resolved the realized change is shown."""
    from ..repair.conflicts import summary
    from ..repair.runs import ConflictingForecasts, repair_run

    try:
        report = repair_run(path, options=options)
    except ConflictingForecasts as exc:
        err.print(
            f"[red]conflict[/red]: {escape(summary(len(exc.described), exc.kind, exc.certain))}, so nothing was "
            "written; --skip-conflicts repairs the others:"
        )
        for t in exc.described:
            err.print(f"  {t.describe()}", markup=False, soft_wrap=True)
        raise typer.Exit(ExitCode.FAILED) from None
    title, columns, rows, total = report.table()
    show(report.model_dump(mode="json"), as_json, lambda: table(title, columns, rows, total=total))
    if not as_json:
        say(report.notes(), out)
    if report.errors:
        err.print(f"[yellow]{len(report.errors)} line error(s) left out[/yellow] (all listed in {REPAIR_REPORT}):")
        for line in report.errors[:5]:
            err.print(f"  {line}", markup=False, soft_wrap=True)
    err.print(f"repaired forecasts written to [bold]{escape(str(report.out))}[/bold] (0 model calls)")
