"""``cc leaderboard --forecastbench``: ForecastBench's leaderboard columns for runs on its questions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from .console import err, escape, out
from .exits import ExitCode


def forecastbench_leaderboard(
    questions: str,
    paths: list[Path],
    *,
    fixed_effects: Path | None,
    baselines: bool,
    bootstrap: int,
    seed: int,
    all_rounds: bool,
    as_json: bool,
) -> None:
    from ..accuracy.inputs import ScoreInputError
    from ..forecastbench import ForecastBenchError
    from ..forecastbench.fixed_effects import read_fixed_effects
    from ..forecastbench.forecasts import read_forecasts
    from ..forecastbench.leaderboard import leaderboard

    try:
        pool = _questions(questions)
        effects = read_fixed_effects(fixed_effects) if fixed_effects is not None else None
        runs = [read_forecasts(p) for p in paths]
        board = leaderboard(pool, runs, baselines=baselines, fixed_effects=effects, bootstrap=bootstrap, seed=seed,
                            all_rounds=all_rounds)  # fmt: skip
    except (ForecastBenchError, ScoreInputError) as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from None
    for note in board.notes:
        err.print(f"note: {escape(note)}", soft_wrap=True)
    if as_json:
        doc = {"rounds": board.rounds, "difficulty": board.scale, "bootstrap": bootstrap,
               "standings": [s.as_forecastbench() for s in board.standings]}  # fmt: skip
        out.print_json(json.dumps(doc))
        return
    _table(board, bootstrap)


def _questions(ref: str):
    """Imported questions (a JSONL of ``cc questions import forecastbench``) or ForecastBench sources."""
    from ..forecastbench import ForecastBenchError, load

    path = Path(ref)
    if path.suffix == ".jsonl":
        from ..evaluation.ground_truth import load_questions

        try:
            questions, errors = load_questions(path)
        except (OSError, ValueError) as exc:
            raise ForecastBenchError(str(exc)) from None
        for e in errors[:5]:
            err.print(f"  skipped {escape(str(e))}", soft_wrap=True)
        return questions
    return load([ref]).imported.questions


def _table(board, bootstrap: int) -> None:
    from rich.table import Table

    def index(score) -> str:
        return "-" if math.isnan(score.index) else f"{score.index:.1f}"

    def ci(score) -> str:
        return "-" if score.low is None else f"[{score.low:.1f}, {score.high:.1f}]"

    def brier(score) -> str:
        return "-" if math.isnan(score.brier) else f"{score.brier:.3f}"

    scale = "two-way fixed effects of the forecasters given" if board.scale == "fitted" else escape(board.scale)
    grid = Table(
        title="ForecastBench leaderboard (Brier Index: 100 perfect, 50 always 0.5; higher is better)",
        caption=f"rounds {', '.join(board.rounds)}; difficulty: {scale}; "
        + (f"95% intervals from {bootstrap} question-bootstrap replicates" if bootstrap else "no intervals")
        + "; Brier D/M/O: ForecastBench's Brier Dataset/Market/Overall (--json: its column names)",
        caption_justify="left",
    )
    # ForecastBench's columns, under short headers so that the table fits a terminal.
    columns = ["Rank", "Model", "Dataset", "N", "95% CI", "Market", "N", "95% CI", "Overall", "N", "95% CI",
               "Brier D", "Brier M", "Brier O"]  # fmt: skip
    for col in columns:
        if col == "Model":
            grid.add_column(col, justify="left", no_wrap=True, overflow="fold")
        else:
            grid.add_column(col, justify="right", no_wrap=True)
    for s in board.standings:
        grid.add_row(
            str(s.rank), escape(s.forecaster),
            index(s.dataset), str(s.dataset.n), ci(s.dataset),
            index(s.market), str(s.market.n), ci(s.market),
            index(s.overall), str(s.overall.n), ci(s.overall),
            brier(s.dataset), brier(s.market), brier(s.overall),
        )  # fmt: skip
    out.print(grid)
