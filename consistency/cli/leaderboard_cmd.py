"""``cc leaderboard``: rank forecasters by a chosen method, with intervals."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Group

from ..accuracy.ranking import METHODS, rank_paths
from .console import err, escape, fmt, questions_of, show, table
from .options import AsJson
from .table_options import SOURCES_HELP, AsOf, Duplicates, merged, skipping

if TYPE_CHECKING:
    from rich.table import Table

    from ..accuracy.typed import TypedBoard

FB_PATHS = " With --forecastbench: run directories and ForecastBench forecast-set files."


def leaderboard(
    paths: Annotated[list[Path] | None, typer.Argument(help=SOURCES_HELP + FB_PATHS)] = None,
    method: Annotated[str, typer.Option("--method", "-m", help=f"One of: {', '.join(METHODS)}.")] = "brier",
    as_of: AsOf = None,
    duplicates: Duplicates = "error",
    as_json: AsJson = False,
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
        _forecastbench(forecastbench, paths or [], fixed_effects=fixed_effects, baselines=baselines,
                                  bootstrap=bootstrap, seed=seed, all_rounds=all_rounds, as_json=as_json)  # fmt: skip
        return
    with skipping() as skipped:
        ranking = rank_paths(paths or [], method, as_of, duplicates, skipped)
    if ranking.from_summaries:
        err.print(
            f"{ranking.from_summaries} forecaster(s) ranked by the mean Brier score of their ground-truth summary"
        )
    merged(ranking.duplicates, duplicates)
    if ranking.held_back:
        err.print(f"{ranking.held_back} early-closing question(s) held back until their scheduled date")
    standings = ranking.standings
    chosen = METHODS[method]
    rows = [
        (i, escape(s.forecaster), fmt(s.score), "-" if s.low is None else f"[{fmt(s.low)}, {fmt(s.high)}]",
         s.n_questions)
        for i, s in enumerate(standings, start=1)
    ]  # fmt: skip
    title = f"{method} ({'lower' if chosen.lower_is_better else 'higher'} is better)"
    doc = {"method": method, "description": chosen.description, "standings": [s.as_dict() for s in standings]}
    if ranking.by_type:  # multiple-choice, numeric and date questions: one board per type
        doc["by_type"] = [b.as_dict() for b in ranking.by_type]
    columns = ("#", "forecaster", "score", "95% interval", "questions")

    def render():
        main = table(title, columns, rows, left=("forecaster",), caption=chosen.description, caption_justify="left")
        if not ranking.by_type:
            return main
        return Group(*([main] if standings else []), *map(_typed, ranking.by_type))

    show(doc, as_json, render)


def _typed(board: TypedBoard) -> Table:
    """One question type's standings: each score's mean and 95% interval, the question count."""
    title, columns, rows = board.table()
    rows = [(rank, escape(name), *rest) for rank, name, *rest in rows]
    return table(title, columns, rows, left=("forecaster",), caption=escape(board.note), caption_justify="left")


def _forecastbench(
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
    """ForecastBench's leaderboard columns for runs on its questions (``--forecastbench``)."""
    from ..forecastbench import load
    from ..forecastbench.fixed_effects import read_fixed_effects
    from ..forecastbench.forecasts import read_forecasts
    from ..forecastbench.leaderboard import leaderboard

    pool = (
        questions_of(questions, strict=False) if questions.endswith(".jsonl") else load([questions]).imported.questions
    )
    effects = read_fixed_effects(fixed_effects) if fixed_effects is not None else None
    runs = [read_forecasts(p) for p in paths]
    board = leaderboard(pool, runs, baselines=baselines, fixed_effects=effects, bootstrap=bootstrap, seed=seed,
                        all_rounds=all_rounds)  # fmt: skip
    for note in board.notes:
        err.print(f"note: {escape(note)}", soft_wrap=True)
    rows = [(rank, escape(name), *rest) for rank, name, *rest in board.rows()]
    show(board.as_dict(bootstrap), as_json, lambda: table(board.TITLE, board.COLUMNS, rows, left=("Model",),
         fold=("Model",), no_wrap=True, caption=escape(board.caption(bootstrap)), caption_justify="left"))  # fmt: skip
