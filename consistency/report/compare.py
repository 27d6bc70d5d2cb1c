"""Several runs side by side: one row per forecaster, and consistency versus accuracy across them.

Runs of one forecaster are paired by their key (its class and configuration, or the ``NAME=`` given on
the command line), so a tuple run and a ground-truth run of the same forecaster make one row. The
correlation is :func:`consistency.accuracy.versus.consistency_vs_brier`, the code of ``cc correlate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..accuracy.inputs import ScoreInputError
from ..accuracy.versus import Correlation, consistency_vs_brier
from .gather import METRICS, Run


@dataclass
class Entry:
    """One forecaster: at most one run with consistency results and one with accuracy results."""

    name: str
    consistency: Run | None = None
    accuracy: Run | None = None

    def violations(self, metric: str) -> dict[str, float]:
        if self.consistency is None:
            return {}
        return {
            c.check.name: c.stats[metric]["avg_violation"]
            for c in self.consistency.checks
            if c.stats[metric]["avg_violation"] is not None
        }

    @property
    def brier(self) -> float | None:
        return None if self.accuracy is None or self.accuracy.accuracy is None else self.accuracy.accuracy.brier


@dataclass
class Comparison:
    entries: list[Entry]
    correlations: dict[str, dict[str, Correlation]] = field(default_factory=dict)  # metric -> check -> r
    why_no_correlation: str | None = None
    max_brier: float = 0.25


def compare(runs: list[Run], *, max_brier: float = 0.25, bootstrap: int = 1000) -> Comparison:
    """Pair runs into forecasters, rank them, and correlate each check's violation with the Brier score."""
    entries: dict[str, Entry] = {}
    for run in runs:
        slot = "consistency" if run.checks else "accuracy"
        key, n = run.key, 1
        while key in entries and getattr(entries[key], slot) is not None:  # same forecaster twice: keep both
            n += 1
            key = f"{run.key}#{n}"
        if key not in entries:
            name, k = run.name, 1
            while any(e.name == name for e in entries.values()):  # names label points and key the correlation
                k += 1
                name = f"{run.name} #{k}"
            entries[key] = Entry(name)
        setattr(entries[key], slot, run)
    result = Comparison(sorted(entries.values(), key=_rank), max_brier=max_brier)
    both = [e for e in result.entries if e.consistency is not None and e.brier is not None]
    brier = {e.name: e.brier for e in both if e.brier is not None}
    try:
        result.correlations = {
            metric: consistency_vs_brier(
                {e.name: e.violations(metric) for e in both}, brier, max_brier=max_brier, bootstrap=bootstrap
            )
            for metric in METRICS
        }
    except ScoreInputError as exc:
        result.why_no_correlation = str(exc)
    return result


def _rank(entry: Entry) -> tuple[float, float, str]:
    """Most consistent first (mean arbitrage violation over checks), then lowest Brier."""
    arb = entry.consistency.aggregate("default") if entry.consistency else None
    brier = entry.brier
    return (float("inf") if arb is None else arb, float("inf") if brier is None else brier, entry.name)


def by_depth(runs: list[Run]) -> dict[str, dict[int, Run]]:
    """ArbitrageForecaster runs grouped by everything in their configuration but ``depth``: depth -> run."""
    groups: dict[str, dict[int, Run]] = {}
    for run in runs:
        recorded = run.forecaster or {}
        config = dict(recorded.get("full_forecaster_config") or {})
        if recorded.get("forecaster_class") != "ArbitrageForecaster" or not run.checks or "depth" not in config:
            continue
        depth = int(config.pop("depth"))
        label = ", ".join(f"{k}={v}" for k, v in sorted(config.items()) if v not in (None, False))
        groups.setdefault(label, {})[depth] = run
    return groups
