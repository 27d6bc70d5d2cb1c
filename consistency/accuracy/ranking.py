"""Leaderboards and head-to-head comparisons over a :class:`~.table.ForecastTable`.

The library behind ``cc leaderboard`` and ``cc compare``: each ranking method turns the table
into one score per forecaster with an interval, lower-is-better or higher-is-better as the
method says.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from ..jsonl import LineError
from ..metrics.stats import bootstrap_mean_ci
from . import difficulty, proper, proxy
from .inputs import ScoreInputError
from .settings import Board, Comparing
from .significance import BootstrapResult, TTestResult, early_closer_filter, head_to_head, weighted_bootstrap
from .significance import weighted_t_test as t_test
from .table import ForecastTable, NoForecastsError
from .typed import TypedBoard, read_typed_rows, typed_boards


@dataclass(frozen=True)
class Standing:
    forecaster: str
    score: float
    low: float | None  # interval, when the method gives one
    high: float | None
    n_questions: int

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Method:
    name: str
    description: str  # one sentence, with its source
    lower_is_better: bool
    rank: Callable[[ForecastTable], list[Standing]]


def resolved(table: ForecastTable) -> tuple[ForecastTable, int]:
    """Rows with a known resolution, and how many rows were left out."""
    keep = np.isfinite(table.resolution)
    return table.select(keep), int((~keep).sum())


def hold_back_early_closers(table: ForecastTable, as_of: datetime) -> tuple[ForecastTable, dict[str, str]]:
    """Drop rows of questions that resolved before their scheduled date, until that date (Metaculus rule).

    Only rows with a scheduled resolution date can be judged; a resolved row without its own
    resolution time is taken to have resolved on schedule. Returns the kept rows and, per held-back
    question, the reason.
    """
    scheduled = table.scheduled_resolution
    judged = np.flatnonzero(~np.isnat(scheduled))
    if judged.size == 0:
        return table, {}
    known = np.isfinite(table.resolution[judged])
    resolved_at = np.where(known & np.isnat(table.resolved_at[judged]), scheduled[judged], table.resolved_at[judged])
    resolved_at = np.where(known, resolved_at, np.datetime64("NaT", "s"))
    verdict = early_closer_filter(resolved_at, scheduled[judged], as_of)
    drop = np.zeros(len(table), dtype=bool)
    reasons: dict[str, str] = {}
    for i, reason in verdict.reasons.items():
        if reason.startswith("early closer"):
            drop[judged[i]] = True
            reasons[str(table.question_id[judged[i]])] = reason
    return table.select(~drop), reasons


def _per_forecaster_mean(table: ForecastTable, losses: np.ndarray) -> list[Standing]:
    out = []
    for name in table.forecasters:
        rows = table.forecaster == name
        x, w = losses[rows], table.weight[rows]
        mean = float(np.average(x, weights=w)) if w.sum() > 0 else float("nan")
        low = high = None
        if len(x) > 1 and w.sum() > 0:  # the interval cc report shows for the same scores (see bootstrap_mean_ci)
            low, high = bootstrap_mean_ci(x, weights=None if np.all(w == w[0]) else w)
        out.append(Standing(name, mean, low, high, int(rows.sum())))
    return out


def _outcome_method(loss: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[ForecastTable], list[Standing]]:
    def rank(table: ForecastTable) -> list[Standing]:
        table, _ = resolved(table)
        if len(table) == 0:
            raise ScoreInputError("no resolved forecasts to score")
        return _per_forecaster_mean(table, loss(table.prob, table.resolution))

    return rank


def _from_scores(result: difficulty.ForecasterScores) -> list[Standing]:
    return [
        Standing(str(f), float(s), None, None, int(n))
        for f, s, n in zip(result.forecasters, result.scores, result.n_answered, strict=True)
    ]


def _difficulty(table: ForecastTable) -> list[Standing]:
    table, _ = resolved(table)
    market = np.isfinite(table.market_prob)
    questions, first = np.unique(table.question_id[market], return_index=True)
    result = difficulty.difficulty_adjusted_brier(
        table.forecaster,
        table.question_id,
        prob=table.prob,
        outcome=table.resolution,
        market_question=questions if len(questions) else None,
        market_prob=table.market_prob[market][first] if len(questions) else None,
        market_weight=1.0 if len(questions) else 0.0,
    )
    return _from_scores(result)


def _peer(table: ForecastTable) -> list[Standing]:
    table, _ = resolved(table)
    return _from_scores(
        difficulty.peer_score(table.forecaster, table.question_id, proper.brier(table.prob, table.resolution))
    )


def _proxy(aggregator: str) -> Callable[[ForecastTable], list[Standing]]:
    def rank(table: ForecastTable) -> list[Standing]:
        matrix, forecasters, _ = table.matrix()
        scores = proxy.proxy_scores(matrix, aggregator, loo=True)
        answered = np.isfinite(matrix).sum(axis=1)
        return [
            Standing(f, float(s), None, None, int(n)) for f, s, n in zip(forecasters, scores, answered, strict=True)
        ]

    return rank


METHODS: dict[str, Method] = {
    "brier": Method(
        "brier",
        "Mean Brier score on resolved questions, with percentile bootstrap 95% intervals (Brier 1950).",
        True,
        _outcome_method(proper.brier),
    ),
    "log": Method(
        "log",
        "Mean log loss in nats, forecasts clipped to [0.001, 0.999], with bootstrap 95% intervals (Good 1952).",
        True,
        _outcome_method(proper.log_loss),
    ),
    "difficulty": Method(
        "difficulty",
        "Difficulty-adjusted Brier: two-way fixed effects b_ij = α_i + γ_j, rescaled so always-0.5 scores 0.25;"
        " market forecasts, when given, set the difficulties (ForecastBench ranking methodology).",
        True,
        _difficulty,
    ),
    "peer": Method(
        "peer",
        "Mean peer score: the question's mean Brier minus the forecaster's (ForecastBench, after Metaculus).",
        False,
        _peer,
    ),
    **{
        f"proxy-{name}": Method(
            f"proxy-{name}",
            f"Mean squared distance to the other forecasters' {label} on each question, needing no outcome"
            " (leave-one-out proxy score; Witkowski et al.; 'Proxy Scoring Enables Benchmarking LLM Forecasters').",
            True,
            _proxy(name),
        )
        for name, label in (
            ("mean", "mean"),
            ("median", "median"),
            ("extremized_mean", "extremized mean (α=2)"),
            ("logit_pool", "logit pool (d=√3)"),
        )
    },
}


def leaderboard(table: ForecastTable, method: str = "brier", as_of: datetime | None = None) -> list[Standing]:
    """Forecasters ordered best first by ``method`` (a key of :data:`METHODS`); with ``as_of``,
    early closers are held back first (see :func:`hold_back_early_closers`)."""
    if as_of is not None:
        table, _ = hold_back_early_closers(table, as_of)
    if method not in METHODS:
        raise ScoreInputError(f"unknown ranking method {method!r}; choose from {', '.join(METHODS)}")
    chosen = METHODS[method]
    rows = chosen.rank(table)
    return sorted(rows, key=lambda s: (np.isnan(s.score), s.score if chosen.lower_is_better else -s.score))


@dataclass
class Ranking:
    """Standings best first by ``method``, and how they were had: forecasters ranked from ground-truth summaries
    alone, early-closing questions held back, repeated forecasts merged by the duplicates policy; ``by_type``:
    the standings of multiple-choice, numeric and date questions, one board per type (see :mod:`.typed`)."""

    method: Method
    standings: list[Standing]
    by_type: list[TypedBoard] = field(default_factory=list)
    from_summaries: int = 0
    held_back: int = 0
    duplicates: int = 0

    @property
    def title(self) -> str:
        return f"{self.method.name} ({'lower' if self.method.lower_is_better else 'higher'} is better)"

    def as_dict(self) -> dict:
        """The board as ``cc leaderboard --json`` prints it."""
        chosen = self.method
        doc = {
            "method": chosen.name,
            "description": chosen.description,
            "standings": [s.as_dict() for s in self.standings],
        }
        if self.by_type:
            doc["by_type"] = [b.as_dict() for b in self.by_type]
        return doc


def rank_paths(
    paths: Sequence[str | Path], board: Board | None = None, skipped: list[LineError] | None = None
) -> Ranking:
    """The leaderboard of the forecasts in ``paths`` (long tables, ground-truth files, run directories).

    ``board``: ``cc leaderboard``'s options. By Brier score with no ``as_of``, a path holding only ground-truth
    summaries is ranked by each forecaster's stored mean and interval (the per-question rows are not needed); the
    other paths are read as one table, and their scored multiple-choice, numeric and date questions as one board
    per type (``as_of`` does not apply to them: their results record no resolution time)."""
    from ..store.runs import truth_summaries_only
    from .table import load_table

    board = board or Board()
    method, as_of, duplicates = board.method, board.as_of, board.duplicates
    if not paths:
        raise ScoreInputError("give the forecasts to rank (files or run directories)")
    summaries = [p for p in paths if truth_summaries_only(p)] if method == "brier" and as_of is None else []
    rest = [p for p in paths if p not in summaries]
    if method not in METHODS:
        raise ScoreInputError(f"unknown ranking method {method!r}; choose from {', '.join(METHODS)}")
    ranking = Ranking(METHODS[method], _from_summaries(summaries))
    ranking.from_summaries = len(ranking.standings)
    if rest:
        typed_skipped: list[LineError] | None = None if skipped is None else []
        ranking.by_type = typed_boards(read_typed_rows(rest, duplicates, typed_skipped), method)
        try:
            table = load_table(rest, duplicates, skipped)
        except NoForecastsError:
            if not ranking.by_type:  # a run of multiple-choice or numeric questions only has no yes/no table
                raise
        else:
            ranking.duplicates = table.duplicates
            if as_of is not None:
                table, held = hold_back_early_closers(table, as_of)
                ranking.held_back = len(held)
            ranking.standings += leaderboard(table, method)
        if skipped is not None and typed_skipped:
            skipped += typed_skipped
    if summaries:  # only by Brier: lower is better
        ranking.standings.sort(key=lambda s: (math.isnan(s.score), s.score))
    return ranking


def _from_summaries(paths: list[str | Path]) -> list[Standing]:
    """Brier standings from each forecaster's stored mean and interval (the one its summary holds, if any)."""
    if not paths:
        return []
    from .sources import find_sources

    truth = find_sources([Path(p) for p in paths]).truth
    return [
        Standing(name, t.brier, *(t.ci95 if t.ci95 is not None else (None, None)), t.questions)
        for name, t in truth.items()
    ]


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    n_questions: int
    weight_sum: float
    mean: float  # mean head-to-head score: positive means A was more accurate
    t_test: TTestResult
    bootstrap: BootstrapResult

    def as_dict(self) -> dict:
        """The comparison as ``cc compare --json`` prints it."""
        t, bs = self.t_test, self.bootstrap
        return {
            "a": self.a,
            "b": self.b,
            "questions": self.n_questions,
            "weighted_questions": self.weight_sum,
            "mean_score": self.mean,
            "t_test": {"t": t.t, "df": t.df, "p_value": t.p_value, "ci95": [t.ci_low, t.ci_high]},
            "bootstrap": {
                "ci95": [bs.ci_low, bs.ci_high],
                "share_positive": bs.prob_positive,
                "resamples": bs.resamples,
            },
        }


def compare(table: ForecastTable, a: str, b: str, settings: Comparing | None = None) -> Comparison:
    """Head-to-head of A against B on the resolved questions both answered (Metaculus method); ``settings``:
    ``cc compare``'s options (its ``duplicates`` is the table reader's)."""
    settings = settings or Comparing()
    if settings.as_of is not None:
        table, _ = hold_back_early_closers(table, settings.as_of)
    table, _ = resolved(table)
    for name in (a, b):
        if name not in table.forecasters:
            raise ScoreInputError(f"no resolved forecasts by {name!r}; forecasters: {', '.join(table.forecasters)}")
    pa = {q: (p, y, w) for q, p, y, w in _rows(table, a)}
    pb = {q: p for q, p, _, _ in _rows(table, b)}
    common = sorted(set(pa) & set(pb))
    if not common:
        raise ScoreInputError(f"{a!r} and {b!r} have no resolved question in common")
    h2h = head_to_head(
        [pa[q][0] for q in common],
        [pb[q] for q in common],
        [pa[q][1] for q in common],
        [pa[q][2] for q in common],
        clip=1e-3,
    )
    return Comparison(
        a,
        b,
        len(common),
        h2h.weight_sum,
        h2h.mean,
        t_test(h2h.scores, h2h.weights),
        weighted_bootstrap(h2h.scores, h2h.weights, resamples=settings.resamples, seed=settings.seed),
    )


def _rows(table: ForecastTable, name: str):
    rows = np.flatnonzero(table.forecaster == name)
    return zip(table.question_id[rows], table.prob[rows], table.resolution[rows], table.weight[rows], strict=True)
