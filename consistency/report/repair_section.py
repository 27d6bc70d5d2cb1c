"""The report's repair section (``cc report RUN --repair [--arbitrage-run DIR]``): one run's forecasts as given,
repaired jointly and tuple by tuple (computed here, no model calls), and an ArbitrageForecaster run over the
same tuples, side by side: mean violation per check, Brier where resolved, model calls spent."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import numpy as np

from ..repair.report_model import Sums, contradictory, mean_violation
from ..repair.runs import base_name, repair_forecasts
from ..repair.sources import ForecastGraph, read_graph


@dataclass
class Contender:
    """One column of the comparison."""

    name: str
    how: str
    violations: dict[str, float | None]  # check name -> mean arbitrage violation (nats)
    brier: float | None  # mean over resolved forecasts (tuples whose resolutions fit a world)
    log: float | None
    resolved: int
    calls: int | None  # model calls spent; None when the directory does not record them

    @property
    def overall(self) -> float | None:
        values = [v for v in self.violations.values() if v is not None]
        return float(np.mean(values)) if values else None


@dataclass
class RepairComparison:
    base: Path
    contenders: list[Contender]
    checks: list[str]
    notes: list[str] = field(default_factory=list)


def _calls(graph: ForecastGraph) -> int | None:
    totals = graph.meta.totals
    return int(totals.calls) if totals is not None and totals.calls is not None else None


def _as_given(graph: ForecastGraph, name: str, how: str) -> Contender:
    sums = Sums()
    outcome = graph.outcome()
    for c in graph.checks:
        o = outcome[c.idx]
        keep = ~contradictory(c.check, o)
        sums.add(c.probs[keep], c.probs[keep], o[keep])
    realized = sums.result("forecast")
    return Contender(
        name,
        how,
        {c.check.name: mean_violation(c.check, c.probs) for c in graph.checks},
        realized.brier_before,
        realized.log_before,
        realized.n,
        _calls(graph),
    )


def compare_repairs(base: str | Path, arbitrage_run: str | Path | None = None) -> RepairComparison:
    """Base, Brier-repaired (joint and per tuple) and, if given, an ArbitrageForecaster run of the same tuples."""
    graph = read_graph(base)
    name = base_name(graph)
    contenders = [_as_given(graph, name, "the forecasts as given")]
    for joint in (True, False):
        report = repair_forecasts(graph, "brier", joint).report
        mode = "joint" if joint else "per-tuple"
        contenders.append(
            Contender(
                f"{name}+repair-brier-{mode}",
                f"Brier repair, {mode} (computed here)",
                {c.check: c.violation_after for c in report.checks},
                report.total.realized.brier_after,
                report.total.realized.log_after,
                report.total.realized.n,
                0,
            )
        )
    notes = []
    if graph.n_disagreeing():
        notes.append(f"{graph.n_disagreeing()} question(s) were forecast differently in different tuples")
    if arbitrage_run is not None:
        other = read_graph(arbitrage_run)
        record = other.forecaster
        name = (record.name if record else None) or Path(arbitrage_run).name
        contenders.append(_as_given(other, str(name), "its own forecasts"))
        recorded_class = record.forecaster_class if record else None
        if "arbitrage" not in str(recorded_class or "").lower():
            notes.append(f"{arbitrage_run} does not record an ArbitrageForecaster ({recorded_class})")
        mine, theirs = (g.meta.fingerprint for g in (graph, other))
        if mine != theirs:
            notes.append(f"{arbitrage_run} may not hold the same tuples (benchmark fingerprints {mine} and {theirs})")
    checks = [c.check.name for c in graph.checks]
    return RepairComparison(Path(base), contenders, checks, notes)


def repair_html(result: RepairComparison) -> str:
    """One self-contained ``<section>``: a row per check, a column per contender."""
    head = ["", *[c.name for c in result.contenders]]
    rows = [["how", *[c.how for c in result.contenders]]]
    for check in result.checks:
        rows.append([f"{check}: mean violation", *[_num(c.violations.get(check)) for c in result.contenders]])
    rows.append(["all checks: mean violation", *[_num(c.overall) for c in result.contenders]])
    rows.append(["Brier where resolved", *[_num(c.brier) for c in result.contenders]])
    rows.append(["log loss where resolved (nats)", *[_num(c.log) for c in result.contenders]])
    rows.append(["resolved forecasts", *[str(c.resolved) for c in result.contenders]])
    rows.append(["model calls", *["–" if c.calls is None else str(c.calls) for c in result.contenders]])
    out = [
        '<section id="repair" data-section="repair"><h2>Repair versus ArbitrageForecaster</h2>',
        f"<p>{escape(str(result.base))}: its forecasts, the same forecasts projected onto the coherent set in the "
        "Brier geometry (no model call), and what an ArbitrageForecaster spent calls to reach. Violations in nats "
        "(lower is better); Brier and log loss on resolved forecasts, leaving out tuples whose resolutions fit no "
        "possible world.</p>",
    ]
    out += [f"<p class='note'>{escape(note)}</p>" for note in result.notes]
    out.append("<table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>")
    out += ["<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows]
    out.append("</tbody></table></section>")
    return "".join(out)


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"
