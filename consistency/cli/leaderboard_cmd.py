"""``cc leaderboard``: rank forecasters by a chosen method, with intervals."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from ..accuracy.inputs import ScoreInputError
from ..accuracy.ranking import METHODS, hold_back_early_closers
from ..accuracy.ranking import leaderboard as rank
from .console import err, escape, fmt, out
from .exits import ExitCode
from .table_options import SOURCES_HELP, AsOf, Duplicates, load_forecasts

if TYPE_CHECKING:
    from ..accuracy.ranking import Standing

FB_PATHS = " With --forecastbench: run directories and ForecastBench forecast-set files."


def leaderboard(
    paths: Annotated[list[Path] | None, typer.Argument(help=SOURCES_HELP + FB_PATHS)] = None,
    method: Annotated[str, typer.Option("--method", "-m", help=f"One of: {', '.join(METHODS)}.")] = "brier",
    as_of: AsOf = None,
    duplicates: Duplicates = "error",
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    forecastbench: Annotated[
        str | None,
        typer.Option(help="ForecastBench's columns instead: its imported questions (JSONL) or sets, with outcomes."),
    ] = None,
    fixed_effects: Annotated[
        Path | None, typer.Option(help="With --forecastbench: ForecastBench's question fixed effects (its scale).")
    ] = None,
    baselines: Annotated[
        bool, typer.Option(help="With --forecastbench: add Always 0, Always 1 and Always 0.5.")
    ] = True,
    bootstrap: Annotated[int, typer.Option(min=0, help="With --forecastbench: bootstrap replicates (0: none).")] = 1999,
    seed: Annotated[int, typer.Option(min=0, help="With --forecastbench: seed of the bootstrap.")] = 0,
    all_rounds: Annotated[
        bool, typer.Option(help="With --forecastbench: also rounds ForecastBench does not rank yet.")
    ] = False,
) -> None:
    """Rank forecasters, best first (by Brier score, ground-truth summaries are enough); with --forecastbench,
    ForecastBench's leaderboard columns."""
    if forecastbench is not None:
        from .fb_leaderboard_cmd import forecastbench_leaderboard

        forecastbench_leaderboard(forecastbench, paths or [], fixed_effects=fixed_effects, baselines=baselines,
                                  bootstrap=bootstrap, seed=seed, all_rounds=all_rounds, as_json=as_json)  # fmt: skip
        return
    if not paths:
        err.print("[red]error[/red] give the forecasts to rank (files or run directories)")
        raise typer.Exit(ExitCode.USAGE)
    try:
        summaries = [p for p in paths if _summaries_only(p)] if method == "brier" and as_of is None else []
        rest = [p for p in paths if p not in summaries]
        standings = _from_summaries(summaries)
        if rest:
            table = load_forecasts(rest, duplicates)
            if as_of is not None:
                table, held = hold_back_early_closers(table, as_of)
                if held:
                    err.print(f"{len(held)} early-closing question(s) held back until their scheduled date")
            standings += rank(table, method)
        if summaries:  # only with --method brier: lower is better
            standings.sort(key=lambda s: (math.isnan(s.score), s.score))
    except ScoreInputError as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from None
    chosen = METHODS[method]
    if as_json:
        out.print_json(
            json.dumps(
                {"method": method, "description": chosen.description, "standings": [s.as_dict() for s in standings]}
            )
        )
        return
    better = "lower" if chosen.lower_is_better else "higher"
    grid = Table(title=f"{method} ({better} is better)", caption=chosen.description, caption_justify="left")
    for col, justify in (
        ("#", "right"),
        ("forecaster", "left"),
        ("score", "right"),
        ("95% interval", "right"),
        ("questions", "right"),
    ):
        grid.add_column(col, justify=justify)
    for i, s in enumerate(standings, start=1):
        interval = "-" if s.low is None else f"[{fmt(s.low)}, {fmt(s.high)}]"
        grid.add_row(str(i), escape(s.forecaster), fmt(s.score), interval, str(s.n_questions))
    out.print(grid)


def _summaries_only(path: Path) -> bool:
    """A ground-truth summary, or a directory of them without per-question results."""
    if path.is_file():
        return path.name == "ground_truth_summary.json"
    return (
        path.is_dir()
        and any(path.rglob("ground_truth_summary.json"))
        and not any(path.rglob("ground_truth_results.jsonl"))
    )


def _from_summaries(paths: list[Path]) -> list[Standing]:
    """Brier standings from each forecaster's stored mean and interval (the one its summary holds, if any)."""
    if not paths:
        return []
    from ..accuracy.ranking import Standing
    from ..accuracy.sources import find_sources

    truth = find_sources(paths).truth
    err.print(f"{len(truth)} forecaster(s) ranked by the mean Brier score of their ground-truth summary")
    return [
        Standing(name, t.brier, *(t.ci95 if t.ci95 is not None else (None, None)), t.questions)
        for name, t in truth.items()
    ]
