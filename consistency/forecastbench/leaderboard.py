"""ForecastBench's leaderboard columns for forecasters on its questions (``src/leaderboard/main.py``).

Per round a forecaster's file is the round's resolution-set rows joined with its forecasts, a
missing forecast imputed at 0.5 (more than 5% imputed leaves the file off). Dataset and market rows
are scored apart: b = (forecast − outcome)², a question's difficulty γ_j from the two-way fixed
effects b_ij = α_i + γ_j fitted on the forecasters that are not baselines (ForecastBench's own
rule: Always 0, Always 1, Always 0.5 and the like do not shape difficulty), the score the mean of
b − γ_j rescaled so that Always 0.5 scores 0.25 (:func:`consistency.accuracy.difficulty.difficulty_adjusted_brier`
does exactly this). Overall = (dataset + market) / 2; the Brier Index is 100·(1 − √Brier); the 95%
intervals are percentiles of the index over ForecastBench's question bootstrap (:mod:`.bootstrap`).
With a published fixed-effects file the difficulties are ForecastBench's own (:mod:`.fixed_effects`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from itertools import repeat
from typing import Any

import numpy as np
from scipy.stats import rankdata

from ..accuracy.difficulty import DisconnectedPanelError, difficulty_adjusted_brier
from ..models import ForecastingQuestion
from .bootstrap import scorer, weight_blocks
from .bulk import paused_collector
from .fixed_effects import FixedEffects, fe_key
from .forecasts import Forecasts
from .formats import ForecastBenchError
from .keys import RowKey
from .rounds import Round, rounds_of

#: ForecastBench's constant forecasters, by its names.
BASELINES = {"Always 0": 0.0, "Always 1": 1.0, "Always 0.5": 0.5}
#: ForecastBench's number of bootstrap replicates.
REPLICATES = 1999


@dataclass(frozen=True)
class Score:
    brier: float  # rescaled difficulty-adjusted Brier score (NaN: no rows)
    n: int
    low: float | None = None  # 95% interval of the Brier Index
    high: float | None = None

    @property
    def index(self) -> float:
        """The Brier Index, 100·(1 − √Brier): 100 perfect, 50 always 0.5."""
        return brier_index(self.brier)


def brier_index(brier: float) -> float:
    return float("nan") if not brier >= 0 else 100.0 * (1.0 - math.sqrt(brier))


@dataclass(frozen=True)
class Standing:
    forecaster: str
    dataset: Score
    market: Score
    overall: Score
    baseline: bool = False
    rank: int = 0

    def as_forecastbench(self) -> dict[str, Any]:
        """The row under ForecastBench's column names (indexes to 1 decimal, Brier to 3, as it writes them)."""

        def ci(s: Score) -> str | None:
            return None if s.low is None else f"[{round(s.low, 1)}, {round(s.high, 1)}]"  # type: ignore[arg-type]

        def num(x: float, digits: int) -> float | None:
            return None if math.isnan(x) else round(x, digits)

        return {
            "Rank": self.rank, "Model": self.forecaster,
            "Dataset": num(self.dataset.index, 1), "N dataset": self.dataset.n, "Dataset 95% CI": ci(self.dataset),
            "Market": num(self.market.index, 1), "N market": self.market.n, "Market 95% CI": ci(self.market),
            "Overall": num(self.overall.index, 1), "N": self.overall.n, "Overall 95% CI": ci(self.overall),
            "Brier Dataset": num(self.dataset.brier, 3), "Brier Market": num(self.market.brier, 3),
            "Brier Overall": num(self.overall.brier, 3),
        }  # fmt: skip


@dataclass
class Leaderboard:
    standings: list[Standing]
    rounds: list[str]  # due dates scored
    notes: list[str] = field(default_factory=list)
    scale: str = "fitted"  # or the fixed-effects file
    difficulties: dict[str, tuple[list[RowKey], np.ndarray]] = field(default_factory=dict)  # part → (keys, γ)


@dataclass
class _Entry:
    name: str
    probs: dict[RowKey, float]
    rounds: set[str]
    baseline: bool


def _by_forecaster(forecasts: Sequence[Forecasts]) -> list[tuple[str, Forecasts, set[str]]]:
    """One entry per forecaster: ForecastBench files of one model for different rounds are one forecaster
    (its leaderboard groups by organization and model); inputs that share a name on a round are told
    apart by where they came from."""
    merged: dict[str, Forecasts] = {}
    dues: dict[int, set[str]] = {}  # each merged forecaster's rounds (a set of its keys' dates: counted once)
    out = []
    for f in forecasts:
        same = merged.get(f.name)
        own = f.dues
        if same is not None and not f.rejected and not same.rejected and not (dues[id(same)] & own):
            same.probs.update(f.probs)
            dues[id(same)] |= own
            continue
        name = f.name if same is None else f"{f.name} ({f.origin})"
        copy = Forecasts(name, f.origin, dict(f.probs), findings=f.findings, rejected=f.rejected)
        dues[id(copy)] = set(own)
        merged.setdefault(f.name, copy)
        out.append((name, copy, dues[id(copy)]))
    return out


def _participants(
    forecasts: Sequence[Forecasts], rounds: dict[str, Round], use: dict[str, Round], notes: list[str]
) -> list[_Entry]:
    entries = []
    for name, f, dues in _by_forecaster(forecasts):
        if f.rejected:
            why = next(str(x) for x in f.findings if x.severity == "rejects")
            notes.append(f"{name}: ForecastBench rejects this file: {why}")
            continue
        taken = set()
        for due in sorted(dues):
            if due not in rounds:
                notes.append(f"{name}: forecasts for {due}, a round the questions carry no resolutions for")
            elif due in use:
                why = use[due].over_cutoff(f.probs)
                if why:
                    notes.append(f"{name}: its round {due} is left off the leaderboard: {why}")
                else:
                    taken.add(due)
        if taken:
            entries.append(_Entry(name, f.probs, taken, False))
    return entries


def _matrix(entries: list[_Entry], rounds: dict[str, Round], market: bool):
    """Brier scores (questions × forecasters, NaN where absent), the questions' keys and bootstrap groups."""
    taken = [due for due in sorted(rounds) if any(due in e.rounds for e in entries)]
    keys = [k for due in taken for k in rounds[due].resolved(market)]
    outcome = np.array([rounds[k.due].rows[k] for k in keys], dtype=float)
    due_of = np.array([k.due for k in keys], dtype=object)
    brier = np.full((len(keys), len(entries)), np.nan)
    for i, e in enumerate(entries):
        rows = np.isin(due_of, list(e.rounds))
        probs = np.fromiter(map(e.probs.get, keys, repeat(0.5)), float, len(keys))  # ForecastBench imputes 0.5
        brier[rows, i] = (probs[rows] - outcome[rows]) ** 2
    groups = np.unique([f"{k.due}/{k.source}" for k in keys], return_inverse=True)[1].ravel() if keys else np.zeros(0)
    return brier, keys, groups


def _point(
    brier: np.ndarray, fitted: np.ndarray, notes: list[str], part: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores per forecaster (NaN without rows), γ per question and the forecasters fitted, by the project's
    difficulty fit. Forecasters that share no round with each other leave the fit in pieces whose scales
    cannot be compared; the baselines, which answer every round, then join the fit to connect them."""
    q, f = np.nonzero(np.isfinite(brier))
    present = set(f.tolist())
    excluded = [i for i in range(brier.shape[1]) if not fitted[i] and i in present]
    try:
        result = difficulty_adjusted_brier(f, q, brier[q, f], exclude_from_difficulty=excluded)
    except DisconnectedPanelError:
        if not excluded:
            raise
        notes.append(
            f"{part}: the forecasters given share no round with each other, so the baselines join the difficulty "
            "fit to put them on one scale (ForecastBench fits many models across rounds)"
        )
        result = difficulty_adjusted_brier(f, q, brier[q, f])
        fitted = np.ones_like(fitted)
    scores = np.full(brier.shape[1], np.nan)
    scores[result.forecasters] = result.scores
    return scores, result.gamma, fitted


def _with_file(brier: np.ndarray, keys: list[RowKey], effects: FixedEffects, market: bool, notes: list[str]):
    gamma = np.array([effects.gamma.get(fe_key(k), np.nan) for k in keys])
    known = np.isfinite(gamma)
    if (~known).any():
        notes.append(
            f"{int((~known).sum())} of {len(keys)} {'market' if market else 'dataset'} rows are not in "
            f"{effects.file} and are not scored"
        )
    brier = brier[known]
    shift = effects.shift(market)
    adjusted = brier - gamma[known][:, None]
    rows = np.isfinite(adjusted).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(rows > 0, np.nansum(adjusted, axis=0) / rows, np.nan) + shift
    return brier, gamma[known], shift, scores, known


def leaderboard(
    questions: Sequence[ForecastingQuestion],
    forecasts: Sequence[Forecasts] = (),
    *,
    baselines: bool = True,
    fixed_effects: FixedEffects | None = None,
    bootstrap: int = REPLICATES,
    seed: int = 0,
    all_rounds: bool = False,
    today: date | None = None,
) -> Leaderboard:
    """ForecastBench's columns for ``forecasts`` (and its constant baselines) on imported ``questions``."""
    with paused_collector():
        rounds = rounds_of(questions)
    if not rounds:
        raise ForecastBenchError(
            "the questions carry no resolution-set rows: import them together with their resolution sets"
        )
    today = today or datetime.now(UTC).date()
    notes: list[str] = []
    use = {}
    for due, r in rounds.items():
        why = None if all_rounds else r.exclusion(today)
        if why:
            notes.append(
                f"round {due} is not on ForecastBench's leaderboard yet: {why}; left out (--all-rounds keeps it)"
            )
        else:
            use[due] = r
    entries = _participants(forecasts, rounds, use, notes)
    scope = {due for e in entries for due in e.rounds} or set(use)
    if not scope:
        raise ForecastBenchError("no round left to score (" + "; ".join(notes) + ")")
    if baselines or not entries:
        entries += [_Entry(name, {}, set(scope), True) for name in BASELINES]
        for e, p in zip(entries[-len(BASELINES) :], BASELINES.values(), strict=True):
            e.probs = {k: p for due in scope for k in rounds[due].rows}
    fitted = (
        np.array([not e.baseline for e in entries])
        if any(not e.baseline for e in entries)
        else np.ones(len(entries), bool)
    )
    board = Leaderboard([], sorted(scope), notes, "fitted" if fixed_effects is None else fixed_effects.file)
    parts, replicas = {}, {}
    rng = np.random.default_rng(seed)
    for part in ("dataset", "market"):
        brier, keys, groups = _matrix(entries, rounds, part == "market")
        if not keys:
            parts[part] = (np.full(len(entries), np.nan), np.zeros(len(entries), int))
            replicas[part] = np.full((bootstrap, len(entries)), np.nan)
            continue
        part_fitted = fitted
        if fixed_effects is None:
            scores, gamma, part_fitted = _point(brier, fitted, notes, part)
            board.difficulties[part] = (keys, gamma)
            shift = None
        else:
            brier, gamma, shift, scores, known = _with_file(brier, keys, fixed_effects, part == "market", notes)
            groups = groups[known]
        parts[part] = (scores, np.isfinite(brier).sum(axis=0))
        reps = []
        if bootstrap and len(brier):
            score = scorer(brier, part_fitted, gamma if fixed_effects else None, shift)
            reps = [score(w) for w in weight_blocks(groups, bootstrap, rng)]
        replicas[part] = np.vstack(reps) if reps else np.full((0, len(entries)), np.nan)
    board.standings = _standings(entries, parts, replicas)
    return board


def _interval(draws: np.ndarray, i: int) -> tuple[float | None, float | None]:
    if draws.shape[0] == 0:
        return None, None
    with np.errstate(invalid="ignore"):
        index = 100.0 * (1.0 - np.sqrt(draws[:, i]))
    index = index[np.isfinite(index)]
    if index.size == 0:
        return None, None
    low, high = np.quantile(index, [0.025, 0.975])
    return float(low), float(high)


def _standings(entries: list[_Entry], parts, replicas) -> list[Standing]:
    d_scores, d_n = parts["dataset"]
    m_scores, m_n = parts["market"]
    overall_draws = (
        (replicas["dataset"] + replicas["market"]) / 2
        if replicas["dataset"].shape == replicas["market"].shape
        else np.zeros((0, len(entries)))
    )
    out = []
    for i, e in enumerate(entries):
        out.append(
            Standing(
                e.name,
                Score(float(d_scores[i]), int(d_n[i]), *_interval(replicas["dataset"], i)),
                Score(float(m_scores[i]), int(m_n[i]), *_interval(replicas["market"], i)),
                Score(float((d_scores[i] + m_scores[i]) / 2), int(d_n[i] + m_n[i]), *_interval(overall_draws, i)),
                e.baseline,
            )
        )
    shown = np.array([round(s.overall.index, 1) if not math.isnan(s.overall.index) else -np.inf for s in out])
    ranks = rankdata(-shown, method="min").astype(int)
    order = sorted(range(len(out)), key=lambda i: (-shown[i], -out[i].overall.n, out[i].forecaster))
    return [
        Standing(out[i].forecaster, out[i].dataset, out[i].market, out[i].overall, out[i].baseline, int(ranks[i]))
        for i in order
    ]
