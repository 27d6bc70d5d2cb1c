"""Several runs side by side: one row per forecaster, and consistency versus accuracy across them.

A run with consistency results and a run with accuracy results of one forecaster make one row, paired
by :func:`consistency.accuracy.pairing.match`, the rule of ``cc correlate`` (a ``NAME=`` given on the
command line names the forecaster). The correlation is
:func:`consistency.accuracy.versus.consistency_vs_brier`, the code of ``cc correlate`` too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..accuracy.inputs import ScoreInputError
from ..accuracy.pairing import by_questions, match
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
    unpaired: dict[str, str] = field(default_factory=dict)  # run (path) -> why it has no partner


def compare(runs: list[Run], *, max_brier: float = 0.25, bootstrap: int = 1000) -> Comparison:
    """Pair runs into forecasters, rank them, and correlate each check's violation with the Brier score."""
    consistency = [r for r in runs if r.checks]
    accuracy = [r for r in runs if not r.checks]
    tiebreak = by_questions(
        [(r.identity, _dir(r.path)) for r in consistency], [(r.identity, _dir(r.path)) for r in accuracy]
    )
    found = match([r.identity for r in consistency], [r.identity for r in accuracy], tiebreak=tiebreak)
    partner = {id(consistency[i]): accuracy[j] for j, i in found.pairs.items()}
    partner.update({id(accuracy[j]): consistency[i] for j, i in found.pairs.items()})
    entries: list[Entry] = []
    placed: set[int] = set()
    for run in runs:  # in the order given: a pair is named after its first run
        if id(run) in placed:
            continue
        name, k = run.name, 1
        while any(e.name == name for e in entries):  # names label points and key the correlation
            k += 1
            name = f"{run.name} #{k}"
        entry = Entry(name)
        for member in (run, partner.get(id(run))):
            if member is not None:
                setattr(entry, "consistency" if member.checks else "accuracy", member)
                placed.add(id(member))
        entries.append(entry)
    unpaired = {consistency[i].path: why for i, why in found.consistency_left.items()}
    unpaired.update({accuracy[j].path: why for j, why in found.accuracy_left.items()})
    result = Comparison(sorted(entries, key=_rank), max_brier=max_brier)
    if found.pairs:  # runs of one lens only (nothing to pair) need no explanation
        result.unpaired = {str(path): why for path, why in unpaired.items()}
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
        recorded = run.forecaster
        config = dict((recorded.full_forecaster_config if recorded else None) or {})
        recorded_class = recorded.forecaster_class if recorded else None
        if recorded_class != "ArbitrageForecaster" or not run.checks or "depth" not in config:
            continue
        depth = int(config.pop("depth"))
        label = ", ".join(f"{k}={v}" for k, v in sorted(config.items()) if v not in (None, False))
        groups.setdefault(label, {})[depth] = run
    return groups


def _dir(path: Path) -> Path:
    """The directory a run was read from (a run may be given as a file in it)."""
    return path if path.is_dir() else path.parent
