"""``cc leaderboard``: rank forecasters by a chosen method, with intervals."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Group

from ..accuracy.settings import SOURCES, Board
from ..forecastbench.requests import BoardRequest
from .console import err, escape, fmt, show, table
from .declared import options_from
from .options import AsJson
from .table_options import merged, skipping

if TYPE_CHECKING:
    from rich.table import Table

    from ..accuracy.typed import TypedBoard
    from ..forecastbench.leaderboard import Leaderboard

FB_PATHS = " With --forecastbench: run directories and ForecastBench forecast-set files."


@options_from(BoardRequest, "fb", flags={"questions": "--forecastbench"}, names={"questions": "forecastbench"})
@options_from(Board, "board", flags={"method": ("--method", "-m")})
def leaderboard(
    paths: Annotated[list[Path] | None, typer.Argument(help=SOURCES + FB_PATHS)] = None,
    as_json: AsJson = False,
    *,
    board: Board,
    fb: BoardRequest,
) -> None:
    """Rank forecasters, best first (by Brier score, ground-truth summaries are enough); with --forecastbench,
    ForecastBench's leaderboard columns."""
    from ..accuracy.ranking import rank_paths

    if fb.questions is not None:
        with skipping("input line(s) skipped") as skipped:
            built = fb.board(paths or [], skipped)
        _forecastbench(built, fb.bootstrap, as_json)
        return
    with skipping() as skipped:
        ranking = rank_paths(paths or [], board, skipped)
    if ranking.from_summaries:
        err.print(
            f"{ranking.from_summaries} forecaster(s) ranked by the mean Brier score of their ground-truth summary"
        )
    merged(ranking.duplicates, board.duplicates)
    if ranking.held_back:
        err.print(f"{ranking.held_back} early-closing question(s) held back until their scheduled date")
    standings, description = ranking.standings, ranking.method.description
    rows = [
        (i, escape(s.forecaster), fmt(s.score), "-" if s.low is None else f"[{fmt(s.low)}, {fmt(s.high)}]",
         s.n_questions)
        for i, s in enumerate(standings, start=1)
    ]  # fmt: skip
    columns = ("#", "forecaster", "score", "95% interval", "questions")

    def render():
        main = table(ranking.title, columns, rows, left=("forecaster",), caption=description, caption_justify="left")
        if not ranking.by_type:
            return main
        return Group(*([main] if standings else []), *map(_typed, ranking.by_type))

    show(ranking.as_dict(), as_json, render)


def _typed(board: TypedBoard) -> Table:
    """One question type's standings: each score's mean and 95% interval, the question count."""
    title, columns, rows = board.table()
    rows = [(rank, escape(name), *rest) for rank, name, *rest in rows]
    return table(title, columns, rows, left=("forecaster",), caption=escape(board.note), caption_justify="left")


def _forecastbench(board: Leaderboard, bootstrap: int, as_json: bool) -> None:
    """ForecastBench's leaderboard columns for runs on its questions (``--forecastbench``)."""
    for note in board.notes:
        err.print(f"note: {escape(note)}", soft_wrap=True)
    rows = [(rank, escape(name), *rest) for rank, name, *rest in board.rows()]
    show(board.as_dict(bootstrap), as_json, lambda: table(board.TITLE, board.COLUMNS, rows, left=("Model",),
         fold=("Model",), no_wrap=True, caption=escape(board.caption(bootstrap)), caption_justify="left"))  # fmt: skip
