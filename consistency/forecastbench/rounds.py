"""ForecastBench's rounds: the rows of each due date's resolution set, and which rounds and files count.

A round is one due date. Its rows are the resolution set's rows that imported questions carry
(``metadata.forecastbench.resolution``): resolved dataset rows and every market row, resolved or
not; combination rows are set apart as the leaderboard sets them apart. ForecastBench's leaderboard
uses a round once its due date is 50 days past and it has at least 50 resolved market rows and 225
resolved dataset rows (combination rows included in both counts), and leaves off a forecaster's file
for a round when more than 5% of its forecasts would be imputed, overall, among market rows or among
resolved dataset rows.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta

from ..models import ForecastingQuestion
from .keys import RowKey, key_of
from .validate import IMPUTED_CUTOFF

MIN_DAYS = 50
MIN_MARKET = 50
MIN_DATASET = 225


@dataclass
class Round:
    due: str
    rows: dict[RowKey, float | None] = field(default_factory=dict)  # outcome 0/1, None when unresolved
    combination_resolved: dict[str, int] = field(default_factory=lambda: {"market": 0, "dataset": 0})
    _parts: tuple[int, dict[str, list[RowKey]]] | None = field(default=None, repr=False, compare=False)

    def resolved(self, market: bool) -> list[RowKey]:
        return [k for k, y in self.rows.items() if y is not None and k.market == market]

    def counts(self) -> dict[str, int]:
        """Resolved rows as ForecastBench counts them for its thresholds (combination rows too)."""
        return {
            "market": len(self.resolved(True)) + self.combination_resolved["market"],
            "dataset": len(self.resolved(False)) + self.combination_resolved["dataset"],
        }

    def exclusion(self, today: date) -> str | None:
        """Why ForecastBench's leaderboard would not use this round yet (None: it would)."""
        counts = self.counts()
        if date.fromisoformat(self.due) > today - timedelta(days=MIN_DAYS):
            return f"its due date is less than {MIN_DAYS} days before {today.isoformat()}"
        if counts["market"] < MIN_MARKET:
            return f"{counts['market']} resolved market rows (ForecastBench needs {MIN_MARKET})"
        if counts["dataset"] < MIN_DATASET:
            return f"{counts['dataset']} resolved dataset rows (ForecastBench needs {MIN_DATASET})"
        return None

    def imputed(self, have: Container[RowKey]) -> dict[str, tuple[int, int]]:
        """(missing, rows) overall, among market rows and among resolved dataset rows."""
        if self._parts is None or self._parts[0] != len(self.rows):  # the rows are all added before the first call
            markets = [k for k in self.rows if k.market]
            datasets = [k for k, y in self.rows.items() if not k.market and y is not None]
            self._parts = (len(self.rows), {"overall": list(self.rows), "market": markets, "dataset": datasets})
        return {p: (len(keys) - sum(map(have.__contains__, keys)), len(keys)) for p, keys in self._parts[1].items()}

    def over_cutoff(self, have: Container[RowKey]) -> str | None:
        """The reason ForecastBench would leave this forecaster's file for the round off the board."""
        for part, (missing, n) in self.imputed(have).items():
            if n and missing / n > IMPUTED_CUTOFF:
                label = "rows" if part == "overall" else f"{part} rows"
                return f"{missing} of {n} {label} ({100 * missing / n:.1f}%) would be imputed (more than 5%)"
        return None


def rounds_of(questions: Iterable[ForecastingQuestion]) -> dict[str, Round]:
    """Rounds from imported questions that carry resolution-set rows."""
    rounds: dict[str, Round] = {}
    for q in questions:
        fb = (q.metadata or {}).get("forecastbench") or {}
        row = fb.get("resolution")
        key = key_of(q.id)
        if key is None or not isinstance(row, dict):
            continue
        target = rounds.setdefault(key.due, Round(key.due))
        resolved = bool(row.get("resolved"))
        if key.combination:
            if resolved:
                target.combination_resolved["market" if key.market else "dataset"] += 1
            continue
        if not key.market and not resolved:
            continue  # ForecastBench drops unresolved dataset rows
        target.rows[key] = float(row["resolved_to"]) if resolved else None
    return dict(sorted(rounds.items()))
