"""One row per result: what it is, who made it, when, its status, cost and size."""

from __future__ import annotations

from typing import Any

from ..store.layout import ATTACK_FILE, RUN_FILE
from .frame import Backend, Column, Paths, build, check_backend, label, read_runs

RUN_COLUMNS = (
    Column("run", "string", "The result's directory name (a single file: its stem)."),
    Column("path", "string", "The path it was read from."),
    Column("kind", "category", "consistency, ground_truth, repair, scored, forecasts or attack."),
    Column("forecaster", "string", "The forecaster's recorded name (else the directory's name)."),
    Column("forecaster_class", "string", "The forecaster's class, when recorded."),
    Column("status", "string", f"complete, partial, failed... as {RUN_FILE} (an attack: {ATTACK_FILE}) says."),
    Column("started", "datetime", "When the run started (UTC)."),
    Column("ended", "datetime", "When it ended (UTC)."),
    Column("consistency_version", "string", "The version of consistency that wrote it."),
    Column("checks", "int64", "Forecast files (one per check)."),
    Column("questions", "Int64", "Questions asked."),
    Column("failed_questions", "Int64", "Questions without a forecast."),
    Column("calls", "Int64", "Model calls."),
    Column("cost", "Float64", "Cost in USD."),
)


def runs_df(paths: Paths, *, backend: Backend = "pandas") -> Any:
    """One row per result: what it is, who made it, when, its status and cost, and its size.

    Columns: :data:`RUN_COLUMNS`. Absent values are missing (``<NA>``), never 0."""
    check_backend(backend)
    rows: list[dict[str, Any]] = []
    for run in read_runs(paths):
        meta, who = run.meta, run.forecaster
        totals = meta.totals if meta and meta.totals else None
        rows.append(
            {
                "run": label(run),
                "path": str(run.path),
                "kind": str(run.kind),
                "forecaster": run.name,
                "forecaster_class": who.forecaster_class if who else None,
                "status": meta.status if meta else (run.attack.status if run.attack else None),
                "started": meta.started if meta else None,
                "ended": meta.ended if meta else None,
                "consistency_version": meta.consistency_version if meta else None,
                "checks": len(run.files),
                "questions": meta.questions if meta else None,
                "failed_questions": meta.failed_questions if meta else None,
                "calls": totals.calls if totals else None,
                "cost": totals.cost if totals else None,
            }
        )
    return build(RUN_COLUMNS, {c.name: [r[c.name] for r in rows] for c in RUN_COLUMNS}, backend)
