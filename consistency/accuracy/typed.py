"""Leaderboards of multiple-choice, numeric and date questions: one per question type, by its proper scores.

``cc evaluate -q`` scores these questions with their own proper scores (multi-class Brier and log for multiple
choice, CRPS and log density for numeric and date; logs in bits) and keeps them apart from the yes/no results.
Here each type gets its own standings, because the scores of different types are not on one scale (a numeric log
score is a density, a multiple-choice one a probability): per forecaster, the mean of each score over the questions
of that type with its percentile bootstrap interval (the interval ``cc evaluate`` and ``cc report`` give), ordered by
the type's first score (or by the log score when the ranking method is ``log``).

How far the ranking methods extend (docs/guides/ranking.md says the same):

- ``brier`` and ``log``: the mean proper scores above.
- ``difficulty`` and ``peer``: not extended. Both are defined on yes/no Brier scores in [0, 1] (the difficulty
  rescaling makes an always-0.5 forecaster score 0.25, and market forecasts set difficulties), which have no
  counterpart for a CDF; these types' standings are the unadjusted mean scores, said in :attr:`TypedBoard.note`.
- ``proxy-*``: scored against the leave-one-out linear pool of the other forecasters' distributions (their mean
  option probabilities, their mean CDF) with :func:`.distribution_scores.proxy_multiclass_brier` and
  :func:`.distribution_scores.proxy_crps`, whatever the yes/no aggregator: the other pools are not defined for CDFs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..jsonl import LineError
from ..metrics.stats import bootstrap_mean_ci
from .distribution_scores import SCORES_BY_TYPE, pool, proxy_crps, proxy_multiclass_brier, result_field
from .inputs import ScoreInputError

if TYPE_CHECKING:
    from ..store.runs import Run

#: How each score is shown.
LABELS = {"brier": "Brier", "log": "log score (bits)", "crps": "CRPS", "proxy": "proxy score"}


@dataclass(frozen=True)
class TypedScore:
    """One forecaster's mean of one score over the questions of a type, with its 95% interval (when it has one)."""

    mean: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class TypedStanding:
    forecaster: str
    n_questions: int
    scores: dict[str, TypedScore]

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class TypedBoard:
    """The standings of one question type, best first (every score lower is better)."""

    question_type: str
    scores: tuple[str, ...]  # the columns, in order; the first ranks
    standings: list[TypedStanding]
    note: str  # what the ranking method does for this type

    def as_dict(self) -> dict:
        return {
            "question_type": self.question_type,
            "scores": list(self.scores),
            "note": self.note,
            "standings": [s.as_dict() for s in self.standings],
        }

    def table(self) -> tuple[str, list[str], list[tuple[object, ...]]]:
        """Title, columns and rows (rank, forecaster, each score's mean and 95% interval, questions)."""
        columns = ["#", "forecaster", *(c for name in self.scores for c in (LABELS[name], "95% interval")), "questions"]

        def cells(score: TypedScore) -> tuple[str, str]:
            interval = "-" if score.low is None else f"[{_fmt(score.low)}, {_fmt(score.high)}]"
            return _fmt(score.mean), interval

        rows = [
            (i, s.forecaster, *(x for name in self.scores for x in cells(s.scores[name])), s.n_questions)
            for i, s in enumerate(self.standings, start=1)
        ]
        return f"{self.question_type.replace('_', ' ')} questions (lower is better)", columns, rows


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


@dataclass
class TypedRows:
    """The scored questions of one type, one row per (forecaster, question), as parallel lists."""

    forecaster: list[str] = field(default_factory=list)
    question_id: list[str] = field(default_factory=list)
    losses: dict[str, list[float]] = field(default_factory=dict)
    forecasts: list[list[float]] = field(default_factory=list)  # option probabilities or the CDF
    where: list[str] = field(default_factory=list)


def read_typed_rows(
    paths: Sequence[str | Path], duplicates: str = "error", skipped: list[LineError] | None = None
) -> dict[str, TypedRows]:
    """Every scored multiple-choice, numeric and date question in ``paths`` (ground-truth runs, trees of them, their
    results files; other paths hold none), by type. A bad line is an error, or recorded in ``skipped``; a question
    scored twice for one forecaster is an error unless ``duplicates`` is ``first`` or ``last`` (``mean`` keeps the
    first too: a mean of two distributions' scores is not the score of their mean)."""
    from ..store.runs import typed_result_runs
    from .table import forecaster_name

    out: dict[str, TypedRows] = {}
    seen: dict[tuple[str, str], tuple[str, int]] = {}
    for path in paths:
        for run in typed_result_runs(path):
            name = forecaster_name(run.directory) or run.directory.name
            add_run(out, run, name, duplicates, skipped, seen)
    return out


def add_run(
    out: dict[str, TypedRows],
    run: Run,
    name: str,
    duplicates: str = "error",
    skipped: list[LineError] | None = None,
    seen: dict[tuple[str, str], tuple[str, int]] | None = None,
) -> dict[str, TypedRows]:
    """Add one run's scored questions (forecaster ``name``) to ``out``, by type (see :func:`read_typed_rows`)."""
    seen = {} if seen is None else seen
    for number, record in run.typed_results():
        where = f"{run.typed_file}:{number}"
        if isinstance(record, LineError):
            if skipped is None:
                raise ScoreInputError(str(record))
            skipped.append(record)
            continue
        kind = record.question.question_type
        if kind not in SCORES_BY_TYPE:
            continue
        rows = out.setdefault(kind, TypedRows(losses={s: [] for s in SCORES_BY_TYPE[kind]}))
        key = (name, record.question.id)
        if key in seen:
            first_where, index = seen[key]
            if duplicates == "error":
                raise ScoreInputError(
                    f"{where}: question {record.question.id} was scored for {name} here and at {first_where};"
                    " choose --duplicates first or last"
                )
            if duplicates == "last":
                _put(rows, index, name, record, where)
            continue
        seen[key] = (where, len(rows.forecaster))
        _put(rows, None, name, record, where)
    return out


def _put(rows: TypedRows, index: int | None, name: str, record, where: str) -> None:
    values = {s: getattr(record, result_field(s)) for s in rows.losses}
    forecast = record.forecast.get("probs") or record.forecast.get("cdf") or []
    for s, v in values.items():
        if v is None or not math.isfinite(v):
            raise ScoreInputError(f"{where}: no finite {result_field(s)} for question {record.question.id}")
    if index is None:
        rows.forecaster.append(name)
        rows.question_id.append(record.question.id)
        rows.where.append(where)
        rows.forecasts.append([float(x) for x in forecast])
        for s, v in values.items():
            rows.losses[s].append(float(v))
    else:
        rows.where[index], rows.forecasts[index] = where, [float(x) for x in forecast]
        for s, v in values.items():
            rows.losses[s][index] = float(v)


def typed_boards(rows: dict[str, TypedRows], method: str = "brier") -> list[TypedBoard]:
    """One board per question type present (in :data:`SCORES_BY_TYPE`'s order) under the ranking ``method``."""
    boards = []
    for kind, names in SCORES_BY_TYPE.items():
        if kind not in rows or not rows[kind].forecaster:
            continue
        r = rows[kind]
        if method.startswith("proxy-"):
            boards.append(_proxy_board(kind, r))
            continue
        order = ("log", *(s for s in names if s != "log")) if method == "log" else names
        note = "mean proper scores with 95% bootstrap intervals"
        if method in ("difficulty", "peer"):
            note = f"unadjusted: the {method} method is defined on yes/no Brier scores only"
        losses = {s: np.asarray(r.losses[s], dtype=float) for s in order}
        standings = _means(np.asarray(r.forecaster, dtype=object), losses)
        boards.append(TypedBoard(kind, tuple(order), _ordered(standings, order[0]), note))
    return boards


def _means(forecaster: np.ndarray, losses: dict[str, np.ndarray]) -> list[TypedStanding]:
    out = []
    for name in sorted(set(forecaster.tolist())):
        rows = forecaster == name
        scores = {}
        for s, x in losses.items():
            mine = x[rows]
            low, high = bootstrap_mean_ci(mine) if len(mine) > 1 else (None, None)
            scores[s] = TypedScore(float(mine.mean()), low, high)
        out.append(TypedStanding(str(name), int(rows.sum()), scores))
    return out


def _ordered(standings: list[TypedStanding], by: str) -> list[TypedStanding]:
    return sorted(standings, key=lambda s: (math.isnan(s.scores[by].mean), s.scores[by].mean, s.forecaster))


def _proxy_board(kind: str, r: TypedRows) -> TypedBoard:
    """Each forecast scored against the mean distribution of the other forecasters on its question."""
    f_names, f_idx = np.unique(np.asarray(r.forecaster, dtype=object), return_inverse=True)
    q_names, q_idx = np.unique(np.asarray(r.question_id, dtype=object), return_inverse=True)
    losses = np.full(len(r.forecaster), np.nan)
    for j in range(len(q_names)):  # questions differ in their number of options: one at a time
        rows = np.flatnonzero(q_idx == j)
        widths = {len(r.forecasts[i]) for i in rows}
        if len(rows) < 2 or len(widths) != 1:
            continue  # nobody else forecast it, or the forecasts disagree on its outcomes
        X = np.full((len(f_names), 1, widths.pop()), np.nan)
        for i in rows:
            X[f_idx[i], 0] = r.forecasts[i]
        agg = pool(X, "mean", loo=True)[f_idx[rows], 0]
        mine = X[f_idx[rows], 0]
        losses[rows] = proxy_multiclass_brier(mine, agg) if kind == "multiple_choice" else proxy_crps(mine, agg)
    scored = np.isfinite(losses)
    if not scored.any():
        raise ScoreInputError(f"no {kind} question was forecast by two forecasters: no proxy score")
    standings = _means(np.asarray(r.forecaster, dtype=object)[scored], {"proxy": losses[scored]})
    what = "mean option probabilities" if kind == "multiple_choice" else "mean CDF"
    note = f"distance to the other forecasters' {what} (leave-one-out linear pool), needing no outcome"
    return TypedBoard(kind, ("proxy",), _ordered(standings, "proxy"), note)
