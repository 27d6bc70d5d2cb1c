"""Repair results: what ``cc repair`` did to each check of a run, read from its ``repair.json``."""

from __future__ import annotations

from typing import Any

from ..store.records import RealizedRecord
from .frame import AnalysisError, Backend, Column, Paths, build, check_backend, label, read_runs

REPAIR_COLUMNS = (
    Column("run", "category", "The repaired directory's name."),
    Column("forecaster", "category", "The forecaster's recorded name."),
    Column("source", "string", "The directory that was repaired."),
    Column("score", "category", "brier (Euclidean projection) or log (KL projection)."),
    Column("joint", "bool", "One value per question over every tuple (joint), or each tuple on its own."),
    Column("check", "category", "The check, or total (the whole repair, one row per run)."),
    Column("tuples", "int64", "Tuples repaired."),
    Column("moved", "float64", "Divergence moved, summed over tuples (brier: squared distance; log: nats)."),
    Column("guaranteed", "float64", "The least the score improves by in every possible world (summed)."),
    Column("violation_before", "float64", "Mean arbitrage violation before (nats; NaN: none)."),
    Column("violation_after", "float64", "Mean arbitrage violation after."),
    Column("resolved", "int64", "Forecasts on resolved questions (the realized change's count)."),
    Column("brier_before", "float64", "Mean Brier score on them before (NaN: none resolved)."),
    Column("brier_after", "float64", "Mean Brier score after."),
    Column("log_before", "float64", "Mean log loss (nats) before."),
    Column("log_after", "float64", "Mean log loss after."),
    Column("seconds", "float64", "Time the repair took (the same on each row of a run; NaN: not recorded)."),
)

#: The ``check`` of the row that holds a repair's totals.
TOTAL = "total"


def repairs_df(paths: Paths, *, backend: Backend = "pandas") -> Any:
    """One row per check of every ``cc repair`` output, and one ``total`` row per output, from its report.

    Columns: :data:`REPAIR_COLUMNS`. Results that are not repairs are skipped; none at all is an
    :class:`AnalysisError`. A joint repair's guarantee holds for the whole graph: read it on the ``total``
    row."""
    check_backend(backend)
    rows: list[dict[str, Any]] = []
    for run in read_runs(paths):
        record = run.repair
        if record is None:
            continue
        common = {"run": label(run), "forecaster": run.name, "source": record.source, "score": record.score,
                  "joint": bool(record.joint), "seconds": record.seconds}  # fmt: skip
        for name, part in [*((c.check, c) for c in record.checks), (TOTAL, record.total)]:
            rows.append({**common, "check": name, "tuples": part.tuples, "moved": part.moved,
                         "guaranteed": part.guaranteed, "violation_before": part.violation_before,
                         "violation_after": part.violation_after, **_realized(part.realized)})  # fmt: skip
    if not rows:
        raise AnalysisError("no repair results among the paths (cc repair writes them)")
    return build(REPAIR_COLUMNS, {c.name: [r[c.name] for r in rows] for c in REPAIR_COLUMNS}, backend)


def _realized(r: RealizedRecord) -> dict[str, Any]:
    return {"resolved": r.n, "brier_before": r.brier_before, "brier_after": r.brier_after,
            "log_before": r.log_before, "log_after": r.log_after}  # fmt: skip
