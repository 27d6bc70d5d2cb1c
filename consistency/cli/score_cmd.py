"""``cc score``: recompute every consistency metric for forecast files, with no LLM."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..evaluation.score_request import ScoreRequest
from ..store.layout import SUMMARY
from .console import err, escape, fmt, pct, print_skipped, say, show, table, violations
from .declared import options_from
from .exits import ExitCode
from .options import AsJson

if TYPE_CHECKING:  # the scoring stack (numpy, pydantic models) loads when the command runs, not for --help
    from ..evaluation.scoring import ScoreReport
    from ..metrics.scoring import ScoreParams


@options_from(ScoreRequest, "request", flags={"out_dir": ("--out", "-o"), "check": ("--check", "-c")})
def score(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Forecast files or directories of <Checker>.jsonl files; several directories (or a directory of "
            "them) are scored one by one into OUT/<directory name>/. An inspect log (.eval/.json of a "
            "consistency/... task; needs the [inspect] extra) is turned into forecast files and scored."
        ),
    ],
    as_json: AsJson = False,
    *,
    request: ScoreRequest,
) -> None:
    """Score forecasts: arbitrage (exact) and frequentist violations, per check and overall."""
    from ..evaluation.scoring import run_directories
    from ..integrations.inspect.logs import is_log_among, score_paths
    from ..paths import new_run_dir

    params, check, out_dir = request.params, request.check, request.out_dir
    runs = None if is_log_among(paths) else run_directories(paths)
    if runs is not None:
        _score_runs(runs, out_dir or new_run_dir("score_corpus"), params, check, as_json)
        return
    _show(*score_paths(paths, params, check, out_dir), as_json)


def _show(report: ScoreReport, target: Path, as_json: bool) -> None:
    show(report.summary(), as_json, lambda: violations(report))
    print_skipped(report.errors, SUMMARY, "line(s) could not be scored", limit=20)
    err.print(f"results written to [bold]{escape(str(target))}[/bold]")
    if not any(f.line_numbers for f in report.files):
        err.print("[red]no line could be scored[/red]")
        raise typer.Exit(ExitCode.FAILED)


def _score_runs(runs: list[Path], out_dir: Path, params: ScoreParams, check: str | None, as_json: bool) -> None:
    """Score each run directory on its own into ``out_dir/<name>/``; one failing directory does not stop the rest."""
    from ..evaluation.scoring import Corpus

    corpus = Corpus(runs)
    say(corpus.score(out_dir, params, check))
    rows = []
    for name, summary in corpus.summaries.items():
        d, f = summary["aggregate"]["default"], summary["aggregate"]["frequentist"]
        rows.append([escape(name), len(summary["checks"]), d["num_samples"], fmt(d["avg_violation"]),
                     pct(d["fraction_violated"]), fmt(f["avg_violation"]), pct(f["fraction_violated"])])  # fmt: skip
    columns = ("run", "checks", "tuples", "arbitrage avg", "arb. violated", "frequentist avg", "freq. violated")
    title = f"Consistency violations per run ({len(runs)} directories; arbitrage in nats)"
    show(corpus.summaries, as_json, lambda: table(title, columns, rows, fold=columns))
    say([corpus.closing(out_dir)])
    if corpus.failed or not corpus.done:
        raise typer.Exit(ExitCode.FAILED)
