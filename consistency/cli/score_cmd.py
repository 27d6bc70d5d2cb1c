"""``cc score``: recompute every consistency metric for forecast files, with no LLM."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import InputError
from ..store.layout import SUMMARY
from .console import err, escape, fmt, pct, print_skipped, show, table, violations
from .exits import ExitCode
from .options import AsJson, Bootstrap, BootstrapSeed, Epsilon

if TYPE_CHECKING:  # the scoring stack (numpy, pydantic models) loads when the command runs, not for --help
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
    as_json: AsJson = False,
    check: Annotated[
        str | None, typer.Option("--check", "-c", help="Check of the given file(s) (default: detect).")
    ] = None,
    epsilon: Epsilon = 1e-3,
    bootstrap: Bootstrap = 1000,
    seed: BootstrapSeed = 0,
) -> None:
    """Score forecasts: arbitrage (exact) and frequentist violations, per check and overall."""
    from ..evaluation.scoring import ScoreParams, run_directories, score_path, write_report
    from ..paths import new_run_dir

    params = ScoreParams(epsilon=epsilon, bootstrap=bootstrap, seed=seed)
    if _score_inspect_log(paths, out_dir, params, check, as_json):
        return
    runs = run_directories(paths)
    if runs is not None:
        _score_runs(runs, out_dir or new_run_dir("score_corpus"), params, check, as_json)
        return
    report = score_path(paths, params, check)
    target = write_report(report, out_dir or new_run_dir(f"score_{paths[0].resolve().name.removesuffix('.jsonl')}"))
    _show(report, target, as_json)


def _show(report: ScoreReport, target: Path, as_json: bool) -> None:
    show(report.summary(), as_json, lambda: violations(report))
    print_skipped(report.errors, SUMMARY, "line(s) could not be scored", limit=20)
    err.print(f"results written to [bold]{escape(str(target))}[/bold]")
    if not any(f.line_numbers for f in report.files):
        err.print("[red]no line could be scored[/red]")
        raise typer.Exit(ExitCode.FAILED)


def _score_inspect_log(
    paths: list[Path], out_dir: Path | None, params: ScoreParams, check: str | None, as_json: bool
) -> bool:
    """An inspect log: its answers as our forecast files, scored into OUT; False when PATHS hold no log."""
    from ..integrations.inspect.logs import is_inspect_log  # file names and first bytes only: no inspect import

    logs = [p for p in paths if is_inspect_log(p)]
    if not logs:
        return False
    if len(paths) > 1:
        raise InputError("give one inspect log at a time (score forecast files in another command)")
    from ..integrations.inspect.logs import score_log
    from ..paths import new_run_dir

    target = out_dir or new_run_dir(f"score_{logs[0].stem}")
    _show(score_log(logs[0], target, params, check), target, as_json)
    return True


def _score_runs(runs: list[Path], out_dir: Path, params: ScoreParams, check: str | None, as_json: bool) -> None:
    """Score each run directory on its own into ``out_dir/<name>/``; one failing directory does not stop the rest."""
    import os

    from ..evaluation.scoring import RunSkipped, score_runs

    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise InputError("two run directories share a name; score them into different --out directories")
    rows, summaries, failed, skipped = [], {}, 0, 0
    for run, result in score_runs(runs, out_dir, params, check, jobs=min(os.cpu_count() or 1, len(runs))):
        if isinstance(result, RunSkipped | str):
            skipped, failed = skipped + isinstance(result, RunSkipped), failed + isinstance(result, str)
            said = result.reason if isinstance(result, RunSkipped) else result
            err.print(
                f"{'[yellow]skipped[/yellow]' if isinstance(result, RunSkipped) else '[red]error[/red]'} {escape(said)}"
            )
            continue
        agg, summaries[run.name] = result["aggregate"], result
        d, f = agg["default"], agg["frequentist"]
        rows.append([escape(run.name), len(result["checks"]), d["num_samples"], fmt(d["avg_violation"]),
                     pct(d["fraction_violated"]), fmt(f["avg_violation"]), pct(f["fraction_violated"])])  # fmt: skip
        if result["errors"]:
            n = len(result["errors"])
            err.print(f"[yellow]{escape(run.name)}: {n} line error(s)[/yellow] (listed in its {SUMMARY})")
    columns = ("run", "checks", "tuples", "arbitrage avg", "arb. violated", "frequentist avg", "freq. violated")
    title = f"Consistency violations per run ({len(runs)} directories; arbitrage in nats)"
    show(summaries, as_json, lambda: table(title, columns, rows, fold=columns))
    done = len(runs) - failed - skipped
    extra = f", {skipped} skipped" if skipped else ""
    err.print(f"results written to [bold]{escape(str(out_dir))}[/bold]/<run>/ ({done} of {len(runs)} scored{extra})")
    if failed or not done:
        raise typer.Exit(ExitCode.FAILED)
