"""``cc repair``: make a run's forecasts coherent after the fact, with no model call, and say what it gained."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..store.layout import REPAIR_REPORT
from .console import err, escape, fmt, out, show, table
from .errors import handle_errors
from .exits import ExitCode
from .options import AsJson

if TYPE_CHECKING:
    from rich.table import Table

    from ..repair.report_model import RepairReport

#: Said when a repair stops: the library removes its partial copy, so nothing is half-written.
UNTOUCHED = "nothing was written (the inputs are untouched); run the command again"


@handle_errors(after=lambda exc, _: UNTOUCHED if isinstance(exc, KeyboardInterrupt) else "nothing was written")
def repair(
    path: Annotated[
        Path,
        typer.Argument(
            help="A run directory (cc evaluate, cc score) or a directory of <Checker>.jsonl forecasts (the paper's).",
            show_default=False,
        ),
    ],
    score: Annotated[
        str,
        typer.Option(
            "--score",
            help="Geometry: brier (Euclidean projection) or log (the KL projection: per tuple, the arbitrage prices).",
        ),
    ] = "brier",
    joint: Annotated[
        bool | None,
        typer.Option(
            "--joint/--per-tuple",
            help="One repaired value per question over every tuple that shares it (log: yes/no checks), or each "
            "tuple on its own (default: joint for brier, per tuple for log).",
            show_default=False,
        ),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Where the repaired directory goes (default: PATH-repaired-SCORE-MODE)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace OUT when it holds an earlier repair.")] = False,
    resolutions: Annotated[
        Path | None,
        typer.Option(
            "--resolutions",
            help="A questions or ground-truth results file: resolutions for questions of the same text.",
        ),
    ] = None,
    skip_conflicts: Annotated[
        bool,
        typer.Option(
            "--skip-conflicts",
            help="Joint repair of tuples that contradict each other: leave out each conflicting set found (listed) "
            "and repair the rest (default: stop, name the conflicting tuples, write nothing).",
        ),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Project the forecasts onto the coherent set (no model calls) and write a repaired run directory.

    The repaired forecasts score better than the originals in every possible world (Brier: by at least the
    squared distance moved; log: by the KL divergence moved, per tuple the arbitrage profit); where questions
    are resolved the realized change is shown."""
    from ..errors import InputError
    from ..repair.conflicts import summary
    from ..repair.runs import ConflictingForecasts, repair_run

    if score not in ("brier", "log"):
        raise InputError(f"--score must be brier or log, not {score}")
    if joint is None:
        joint = score == "brier"
    try:
        report = repair_run(
            path,
            score,  # type: ignore[arg-type]
            joint,
            out_dir,
            force=force,
            resolutions=resolutions,
            skip_conflicts=skip_conflicts,
        )
    except ConflictingForecasts as exc:
        err.print(
            f"[red]conflict[/red]: {escape(summary(len(exc.described), exc.kind, exc.certain))}, so nothing was "
            "written; --skip-conflicts repairs the others:"
        )
        for t in exc.described:
            err.print(f"  {t.describe()}", markup=False, soft_wrap=True)
        raise typer.Exit(ExitCode.FAILED) from None
    show(report.model_dump(mode="json"), as_json, lambda: render_table(report))
    if not as_json:
        _notes(report)
    if report.errors:
        err.print(f"[yellow]{len(report.errors)} line error(s) left out[/yellow] (all listed in {REPAIR_REPORT}):")
        for line in report.errors[:5]:
            err.print(f"  {line}", markup=False, soft_wrap=True)
    err.print(f"repaired forecasts written to [bold]{escape(str(report.out))}[/bold] (0 model calls)")


def render_table(report: RepairReport) -> Table:
    """Per check: tuples, distance moved, guaranteed gain, violations and Brier scores before and after."""
    guaranteed = "guaranteed gain" if report.score == "brier" else "guaranteed gain (nats)"
    columns = ("check", "tuples", "moved", guaranteed, "violation before", "after", "resolved", "Brier before", "after")

    def cells(name: str, c, gain: str) -> list[object]:
        r = c.realized
        return [name, c.tuples, fmt(c.moved), gain, fmt(c.violation_before), fmt(c.violation_after), r.n,
                fmt(r.brier_before), fmt(r.brier_after)]  # fmt: skip

    rows = [cells(c.check, c, "(whole graph)" if report.joint else fmt(c.guaranteed)) for c in report.checks]
    total = cells("total", report.total, fmt(report.total.guaranteed))
    return table(f"Repair ({report.method}; no model calls; arbitrage and log in nats)", columns, rows, total=total)


def _notes(report: RepairReport) -> None:
    from ..checks import get_check

    t = report.total
    if report.left_out:
        sets = len({c.conflict for c in report.left_out})
        out.print(
            f"[yellow]{len(report.left_out)} tuple(s) left out[/yellow]: {sets} set(s) of tuples that contradict "
            f"each other (--skip-conflicts; all listed in {REPAIR_REPORT}):"
        )
        for c in report.left_out[:10]:
            out.print(f"  set {c.conflict + 1}: {c.describe()}", markup=False, soft_wrap=True)
    if report.joint:
        which = "all its tuples" if not report.left_out else "all its other tuples"
        categorical = any(get_check(c.check).categorical for c in report.checks)
        counted = " (a multiple-choice or numeric question's outcomes counted one by one)" if categorical else ""
        out.print(
            f"{report.questions} distinct questions{counted}, one value each; the guaranteed gain holds for the "
            f"whole graph in every world consistent with {which}: {fmt(t.guaranteed)}"
        )
        if report.joint_worlds == "unknown":
            out.print(
                "[yellow]no such world was found within the search's budget, nor ruled out[/yellow]: where there is "
                "none, the guarantee is about no world"
            )
    if report.disagreeing_questions:
        how = "started from the mean of its forecasts" if report.joint else "repaired in each tuple separately"
        out.print(f"{report.disagreeing_questions} question(s) were forecast differently in different tuples: {how}")
    q = t.realized_questions
    if q.n:
        out.print(
            f"resolved questions, each once: Brier {fmt(q.brier_before)} → {fmt(q.brier_after)}, "
            f"log loss {fmt(q.log_before)} → {fmt(q.log_after)} (n={q.n})"
        )
    contradictory = sum(c.contradictory_resolutions for c in report.checks)
    if contradictory:
        out.print(
            f"[yellow]{contradictory} tuple(s) have resolutions no possible world allows[/yellow] "
            "(left out of the realized scores: no guarantee covers them)"
        )
    if report.conflicting_resolutions:
        out.print(f"{report.conflicting_resolutions} question(s) resolved differently in two places: left unresolved")
