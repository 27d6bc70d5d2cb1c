"""``cc score``: recompute every consistency metric for forecast files, with no LLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..store.layout import SUMMARY
from .console import err, escape, fmt, out, pct, print_skipped

if TYPE_CHECKING:  # the scoring stack (numpy, pydantic models) loads when the command runs, not for --help
    from rich.table import Table

    from ..evaluation.scoring import ScoreReport
    from ..metrics.scoring import ScoreParams


def score(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Forecast files or directories of <Checker>.jsonl files; several directories (or a directory of "
            "them) are scored one by one into OUT/<directory name>/. An inspect log (.eval/.json of a "
            "consistency/... task; needs the [inspect] extra) is turned into forecast files and scored."
        ),
    ],
    out_dir: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output directory (default: runs/<time>_score_<name>).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of a table.")] = False,
    check: Annotated[
        str | None, typer.Option("--check", "-c", help="Check of the given file(s) (default: detect).")
    ] = None,
    epsilon: Annotated[
        float, typer.Option(min=0, max=0.5, help="Forecasts of exactly 0 or 1 are moved to ε / 1-ε for arbitrage.")
    ] = 1e-3,
    bootstrap: Annotated[
        int, typer.Option(min=0, help="Bootstrap resamples for the 95% interval of each mean (0: none).")
    ] = 1000,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the bootstrap.")] = 0,
) -> None:
    """Score forecasts: arbitrage (exact) and frequentist violations, per check and overall."""
    from ..evaluation.scoring import (
        NothingToScore,
        ScoreParams,
        ScoringError,
        run_directories,
        score_path,
        write_report,
    )
    from ..files import DetectionError
    from ..paths import new_run_dir

    params = ScoreParams(epsilon=epsilon, bootstrap=bootstrap, seed=seed)
    if _score_inspect_log(paths, out_dir, params, check, as_json):
        return
    try:
        runs = run_directories(paths)
    except ScoringError as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if runs is not None:
        _score_runs(runs, out_dir or new_run_dir("score_corpus"), params, check, as_json)
        return
    try:
        report = score_path(paths, params, check)
        target = write_report(report, out_dir or new_run_dir(f"score_{paths[0].resolve().name.removesuffix('.jsonl')}"))
    except NothingToScore as exc:
        err.print(f"[red]no line could be scored[/red]: {escape(str(exc))}")
        raise typer.Exit(1) from None
    except (ScoringError, DetectionError, KeyError, OSError, ValueError) as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if as_json:
        out.print_json(json.dumps(report.summary()))
    else:
        out.print(render_table(report))
    _report_errors(report)
    err.print(f"results written to [bold]{escape(str(target))}[/bold]")
    if not any(f.line_numbers for f in report.files):
        err.print("[red]no line could be scored[/red]")
        raise typer.Exit(1)


def _score_inspect_log(
    paths: list[Path], out_dir: Path | None, params: ScoreParams, check: str | None, as_json: bool
) -> bool:
    """An inspect log: its answers as our forecast files, scored into OUT; False when PATHS hold no log."""
    from ..integrations.inspect.logs import is_inspect_log  # file names and first bytes only: no inspect import

    logs = [p for p in paths if is_inspect_log(p)]
    if not logs:
        return False
    if len(paths) > 1:
        err.print("[red]error[/red] give one inspect log at a time (score forecast files in another command)")
        raise typer.Exit(2)
    from ..evaluation.scoring import ScoringError
    from ..integrations.inspect.logs import score_log
    from ..paths import new_run_dir

    log = logs[0]
    target = out_dir or new_run_dir(f"score_{log.stem}")
    try:
        report = score_log(log, target, params, check)
    except (ScoringError, KeyError, OSError, ValueError) as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if as_json:
        out.print_json(json.dumps(report.summary()))
    else:
        out.print(render_table(report))
    _report_errors(report)
    err.print(f"results written to [bold]{escape(str(target))}[/bold]")
    if not any(f.line_numbers for f in report.files):
        err.print("[red]no line could be scored[/red]")
        raise typer.Exit(1)
    return True


def _score_runs(runs: list[Path], out_dir: Path, params: ScoreParams, check: str | None, as_json: bool) -> None:
    """Score each run directory on its own into ``out_dir/<name>/``; one failing directory does not stop the rest."""
    import os

    from rich.table import Table

    from ..evaluation.scoring import RunSkipped, score_runs

    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        err.print("[red]error[/red] two run directories share a name; score them into different --out directories")
        raise typer.Exit(2)
    grid = Table(title=f"Consistency violations per run ({len(runs)} directories; arbitrage in nats)")
    for col in ("run", "checks", "tuples", "arbitrage avg", "arb. violated", "frequentist avg", "freq. violated"):
        grid.add_column(col, justify="left" if col == "run" else "right", overflow="fold")
    summaries: dict[str, object] = {}
    failed = skipped = 0
    for run, result in score_runs(runs, out_dir, params, check, jobs=min(os.cpu_count() or 1, len(runs))):
        if isinstance(result, RunSkipped):
            skipped += 1
            err.print(f"[yellow]skipped[/yellow] {escape(result.reason)}")
            continue
        if isinstance(result, str):
            failed += 1
            err.print(f"[red]error[/red] {escape(result)}")
            continue
        agg = result["aggregate"]
        summaries[run.name] = result
        grid.add_row(
            escape(run.name),
            str(len(result["checks"])),
            str(agg["default"]["num_samples"]),
            fmt(agg["default"]["avg_violation"]),
            pct(agg["default"]["fraction_violated"]),
            fmt(agg["frequentist"]["avg_violation"]),
            pct(agg["frequentist"]["fraction_violated"]),
        )
        if result["errors"]:
            n = len(result["errors"])
            err.print(f"[yellow]{escape(run.name)}: {n} line error(s)[/yellow] (listed in its {SUMMARY})")
    if as_json:
        out.print_json(json.dumps(summaries))
    else:
        out.print(grid)
    done = len(runs) - failed - skipped
    extra = f", {skipped} skipped" if skipped else ""
    err.print(f"results written to [bold]{escape(str(out_dir))}[/bold]/<run>/ ({done} of {len(runs)} scored{extra})")
    if failed or not done:
        raise typer.Exit(1)


def render_table(report: ScoreReport) -> Table:
    from rich.table import Table

    table = Table(title="Consistency violations (arbitrage in nats; frequentist in z-units)")
    table.add_column("check")
    table.add_column("n", justify="right")
    table.add_column("arbitrage avg", justify="right")
    table.add_column("arb. violated", justify="right")
    table.add_column("frequentist avg", justify="right")
    table.add_column("freq. violated", justify="right")
    for f in report.files:
        s = f.stats()
        table.add_row(
            f.check.name,
            str(s["default"].num_samples),
            fmt(s["default"].avg_violation),
            pct(s["default"].fraction_violated),
            fmt(s["frequentist"].avg_violation),
            pct(s["frequentist"].fraction_violated),
        )
    agg = report.aggregate()
    table.add_section()
    table.add_row(
        "aggregate",
        str(agg["default"]["num_samples"]),
        fmt(agg["default"]["avg_violation"]),
        pct(agg["default"]["fraction_violated"]),
        fmt(agg["frequentist"]["avg_violation"]),
        pct(agg["frequentist"]["fraction_violated"]),
        style="bold",
    )
    return table


def _report_errors(report: ScoreReport) -> None:
    print_skipped(report.errors, SUMMARY, "line(s) could not be scored", limit=20)
