"""Leaderboard rows: ``cc leaderboard``'s standings, and ForecastBench's columns (``--forecastbench``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.layout import FORECAST_SUFFIX
from .frame import Backend, Column, Paths, build, check_backend

if TYPE_CHECKING:
    from ..models import ForecastingQuestion

LEADERBOARD_COLUMNS = (
    Column("rank", "int64", "1 for the best, in the method's order."),
    Column("forecaster", "string", "The forecaster's name."),
    Column("score", "float64", "Its score by the method (NaN: none)."),
    Column("low", "float64", "95% interval, low end (NaN when the method gives none)."),
    Column("high", "float64", "95% interval, high end."),
    Column("questions", "int64", "Questions scored."),
    Column("method", "category", "The ranking method (brier, log, difficulty, peer, proxy-...)."),
    Column("lower_is_better", "bool", "Whether a lower score is better under the method."),
)


def _part(part: str, label: str) -> tuple[Column, ...]:
    return (
        Column(part, "float64", f"{label} Brier Index, 100·(1 − √Brier): 100 perfect, 50 always 0.5."),
        Column(f"{part}_n", "int64", f"{label} rows scored."),
        Column(f"{part}_low", "float64", f"{label} index, 95% question-bootstrap interval, low end (NaN: none)."),
        Column(f"{part}_high", "float64", f"{label} index, 95% interval, high end."),
        Column(f"{part}_brier", "float64", f"{label} difficulty-adjusted Brier, rescaled so always 0.5 is 0.25."),
    )


FORECASTBENCH_COLUMNS = (
    Column("rank", "int64", "ForecastBench's rank: min-rank of the Overall index rounded to 1 decimal."),
    Column("forecaster", "string", "The model (a forecast set: organization and model)."),
    Column("baseline", "bool", "Always 0, Always 1 or Always 0.5."),
    *_part("dataset", "Dataset"),
    *_part("market", "Market"),
    *_part("overall", "Overall"),
)


def leaderboard_df(
    paths: Paths,
    method: str = "brier",
    *,
    as_of: datetime | None = None,
    duplicates: str = "error",
    backend: Backend = "pandas",
) -> Any:
    """``cc leaderboard PATHS --method METHOD`` as rows, best first: long tables (CSV/JSONL), ground-truth
    files or run directories, read by :func:`consistency.accuracy.table.load_table` and ranked by
    :func:`consistency.accuracy.ranking.leaderboard`.

    Columns: :data:`LEADERBOARD_COLUMNS`. Bad rows are left out and listed in ``attrs["errors"]``."""
    from ..accuracy.ranking import METHODS, ScoreInputError
    from ..accuracy.ranking import leaderboard as rank
    from ..accuracy.table import load_table
    from ..jsonl import LineError

    check_backend(backend)
    if method not in METHODS:
        raise ScoreInputError(f"unknown ranking method {method!r}; choose from {', '.join(METHODS)}")
    skipped: list[LineError] = []
    given = [paths] if isinstance(paths, str | Path) else list(paths)
    standings = rank(load_table(given, duplicates, skipped), method, as_of)
    chosen = METHODS[method]
    data = {
        "rank": list(range(1, len(standings) + 1)),
        "forecaster": [s.forecaster for s in standings],
        "score": [s.score for s in standings],
        "low": [s.low for s in standings],
        "high": [s.high for s in standings],
        "questions": [s.n_questions for s in standings],
        "method": [method] * len(standings),
        "lower_is_better": [chosen.lower_is_better] * len(standings),
    }
    return build(LEADERBOARD_COLUMNS, data, backend, errors=[str(e) for e in skipped])


def forecastbench_df(
    questions: str | Path | Sequence[ForecastingQuestion],
    paths: Paths = (),
    *,
    fixed_effects: str | Path | None = None,
    baselines: bool = True,
    bootstrap: int = 1999,
    seed: int = 0,
    all_rounds: bool = False,
    today: date | None = None,
    backend: Backend = "pandas",
) -> Any:
    """``cc leaderboard --forecastbench QUESTIONS PATHS`` as rows: ForecastBench's leaderboard columns
    (:func:`consistency.forecastbench.leaderboard.leaderboard`) for run directories and forecast sets.

    ``questions``: imported questions (a JSONL file, or the questions themselves) or ForecastBench sources
    (question and resolution sets, folders). Columns: :data:`FORECASTBENCH_COLUMNS`, unrounded; the rounds
    scored and the leaderboard's notes are in ``attrs["rounds"]`` and ``attrs["notes"]`` (pandas)."""
    from ..forecastbench.fixed_effects import read_fixed_effects
    from ..forecastbench.forecasts import read_forecasts
    from ..forecastbench.leaderboard import leaderboard

    check_backend(backend)
    pool = _questions(questions) if isinstance(questions, str | Path) else list(questions)
    effects = read_fixed_effects(fixed_effects) if fixed_effects is not None else None
    given = [paths] if isinstance(paths, str | Path) else list(paths)
    runs = [read_forecasts(p) for p in given]
    board = leaderboard(
        pool, runs, baselines=baselines, fixed_effects=effects, bootstrap=bootstrap, seed=seed,
        all_rounds=all_rounds, today=today,
    )  # fmt: skip
    data: dict[str, list[Any]] = {c.name: [] for c in FORECASTBENCH_COLUMNS}
    for s in board.standings:
        data["rank"].append(s.rank)
        data["forecaster"].append(s.forecaster)
        data["baseline"].append(s.baseline)
        for part in ("dataset", "market", "overall"):
            score = getattr(s, part)
            data[part].append(score.index)
            data[f"{part}_n"].append(score.n)
            data[f"{part}_low"].append(score.low)
            data[f"{part}_high"].append(score.high)
            data[f"{part}_brier"].append(score.brier)
    frame = build(FORECASTBENCH_COLUMNS, data, backend, notes=board.notes)
    if backend == "pandas":
        frame.attrs["rounds"] = list(board.rounds)
    return frame


def _questions(source: str | Path) -> list[ForecastingQuestion]:
    """Imported questions from a JSONL file, else ForecastBench sources imported as ``cc questions import`` does."""
    from ..evaluation.ground_truth import read_questions
    from ..forecastbench import load

    if str(source).endswith(FORECAST_SUFFIX):  # a JSONL file of questions
        return read_questions(source, strict=False)[0]
    return load([str(source)]).imported.questions
