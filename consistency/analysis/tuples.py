"""Tuples and their violations: one row per tuple, per forecast within a tuple, and per check."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..metrics.scoring import METRICS, ScoreParams, score_forecasts
from ..store.lines import TupleColumns
from ..store.runs import Run
from .frame import WHO, Backend, Column, Paths, build, check_backend, concat, label, read_runs

#: The frames' name of each metric of the files (``violation_data`` keys).
METRIC_COLUMNS = {"default": "arbitrage", "default_scaled": "arbitrage_scaled", "frequentist": "frequentist"}
_METRIC_MEANING = {
    "arbitrage": "The arbitrage violation (nats; the files' default).",
    "arbitrage_scaled": "The arbitrage violation scaled by the tuple's size (default_scaled).",
    "frequentist": "The frequentist violation.",
}

_WHO = (
    *WHO,
    Column("check", "category", "The check (NEGATION, AND, ...)."),
    Column("line", "int64", "The line in the check's file (from 1)."),
)
TUPLE_COLUMNS = (
    *_WHO,
    Column("tuple", "string", "Its questions' ids joined by |: the key that pairs two runs' tuples."),
    *(
        c
        for m in METRIC_COLUMNS.values()
        for c in (
            Column(m, "float64", _METRIC_MEANING[m]),
            Column(f"{m}_violated", "bool", f"Whether {m} exceeds its threshold (the line's verdict)."),
        )
    ),
)
#: With ``text=True``.
TUPLE_TEXT_COLUMNS = (
    *TUPLE_COLUMNS,
    Column("source", "category", "The first question's data_source (empty when none)."),
    Column("title", "string", "The first question's title."),
)
FORECAST_COLUMNS = (
    *_WHO,
    Column("field", "category", "The tuple's field: P, not_P, P_and_Q... (a multiple-choice field X: X[0], X[1]...)."),
    Column("question_id", "string", "The question's id."),
    Column("title", "string", "The question's title."),
    Column("source", "category", "The question's data_source (empty when none)."),
    Column("prob", "float64", "The probability given (to the field's outcome, for a multiple-choice field)."),
    Column("arbitrage", "float64", "The tuple's arbitrage violation."),
    Column("frequentist", "float64", "The tuple's frequentist violation."),
)
CHECK_COLUMNS = (
    *WHO,
    Column("check", "category", "The check."),
    Column("tuples", "int64", "Tuples read."),
    Column("unreadable", "int64", "Lines skipped (listed in the frame's errors)."),
    *(
        Column(f"{m}_{stat}", "float64", f"{what} of {m} over the check's tuples (NaN: none).")
        for m in METRIC_COLUMNS.values()
        for stat, what in (("mean", "Mean"), ("median", "Median"), ("violated", "Fraction violated, in [0, 1],"))
    ),
)


def _scored(columns: TupleColumns, params: ScoreParams) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each metric's violation and verdict per row: as recorded on the line, else scored here (the paper's
    unscored files) with ``params``'s thresholds, as ``cc score`` would."""
    values = {m: columns.violation[m].copy() for m in METRICS}
    violated = {m: ~columns.passed[m] for m in METRICS}
    missing = np.zeros(len(columns), dtype=bool)
    for m in METRICS:
        missing |= np.isnan(values[m])
    if missing.any():
        scores = score_forecasts(columns.check, columns.probs[missing], params=params)
        for m in METRICS:
            fresh = scores.values(m)
            values[m][missing] = fresh
            violated[m][missing] = fresh > params.threshold(m)
    return values, violated


def _tuple_sets(
    paths: Paths, text: bool, params: ScoreParams | None
) -> Iterator[tuple[Run, TupleColumns, dict[str, np.ndarray], dict[str, np.ndarray]]]:
    params = params or ScoreParams()
    for run in read_runs(paths):
        for file in run.files:
            columns = run.tuples(file, text=text)
            values, violated = _scored(columns, params)
            yield run, columns, values, violated


def tuple_frame(
    sets: Iterable[tuple[str, str, TupleColumns, dict[str, np.ndarray], dict[str, np.ndarray]]],
    *,
    backend: Backend = "pandas",
) -> Any:
    """The frame of :func:`tuples_df` from columns already read: ``(run, forecaster, columns, violations,
    verdicts)`` per check file. Kept apart so its cost can be measured without the reading."""
    check_backend(backend)
    parts: dict[str, list[np.ndarray]] = {c.name: [] for c in TUPLE_TEXT_COLUMNS}
    errors: list[str] = []
    has_text = True
    for run, forecaster, columns, values, violated in sets:
        n = len(columns)
        parts["run"].append(np.full(n, run, dtype=object))
        parts["forecaster"].append(np.full(n, forecaster, dtype=object))
        parts["check"].append(np.full(n, columns.check.name, dtype=object))
        parts["line"].append(columns.line)
        parts["tuple"].append(np.asarray(columns.ids(), dtype=object))
        for m, name in METRIC_COLUMNS.items():
            parts[name].append(values[m])
            parts[f"{name}_violated"].append(violated[m])
        if columns.sources is None or columns.titles is None:
            has_text = False
        else:
            parts["source"].append(np.asarray([s[0] for s in columns.sources], dtype=object))
            parts["title"].append(np.asarray([t[0] for t in columns.titles], dtype=object))
        errors += [str(e) for e in columns.errors]
    schema = TUPLE_TEXT_COLUMNS if has_text and parts["run"] else TUPLE_COLUMNS
    kinds = {"line": np.int64, **{c.name: c.dtype for c in schema if c.dtype in ("float64", "bool")}}
    data = {c.name: concat(parts[c.name], kinds.get(c.name, object)) for c in schema}
    return build(schema, data, backend, errors=errors)


def tuples_df(
    paths: Paths, *, text: bool = False, params: ScoreParams | None = None, backend: Backend = "pandas"
) -> Any:
    """One row per tuple of every check of every run: its violation under each metric and whether it counts
    as violated.

    Columns: :data:`TUPLE_COLUMNS`; with ``text=True`` :data:`TUPLE_TEXT_COLUMNS`. Lines carrying no scores
    (the paper's files) are scored with ``params`` (default: ``cc score``'s), as the report does."""
    check_backend(backend)
    sets = ((label(r), r.name, c, v, x) for r, c, v, x in _tuple_sets(paths, text, params))
    return tuple_frame(sets, backend=backend)


def forecasts_df(paths: Paths, *, params: ScoreParams | None = None, backend: Backend = "pandas") -> Any:
    """One row per forecast within a tuple: each question a tuple asked about, the probability given, and
    its tuple's violation, so ``groupby("question_id")`` answers per-question questions (which questions sit
    in the most violated tuples, how far one question's forecasts move between tuples).

    Columns: :data:`FORECAST_COLUMNS`."""
    check_backend(backend)
    parts: dict[str, list[np.ndarray]] = {c.name: [] for c in FORECAST_COLUMNS}
    errors: list[str] = []
    for run, columns, values, _violated in _tuple_sets(paths, True, params):
        check = columns.check
        owner = [i for i, f in enumerate(check.field_names) for _ in range(check.categorical.get(f, 1))]
        n, k = len(columns), check.n_columns  # one row per forecast column (a multiple-choice field: per outcome)
        for name, array in (
            ("run", np.full(n * k, label(run), dtype=object)),
            ("forecaster", np.full(n * k, run.name, dtype=object)),
            ("check", np.full(n * k, columns.check.name, dtype=object)),
            ("line", np.repeat(columns.line, k)),
            ("field", np.tile(np.asarray(check.columns, dtype=object), n)),
            ("question_id", np.asarray([row[i] for row in columns.question_ids for i in owner], dtype=object)),
            ("title", np.asarray([t for row in columns.titles or [] for t in row], dtype=object)),
            ("source", np.asarray([row[i] for row in columns.sources or [] for i in owner], dtype=object)),
            ("prob", columns.probs.reshape(-1)),
            ("arbitrage", np.repeat(values["default"], k)),
            ("frequentist", np.repeat(values["frequentist"], k)),
        ):
            parts[name].append(array)
        errors += [str(e) for e in columns.errors]
    kinds = {"line": np.int64, "prob": float, "arbitrage": float, "frequentist": float}
    data = {c.name: concat(parts[c.name], kinds.get(c.name, object)) for c in FORECAST_COLUMNS}
    return build(FORECAST_COLUMNS, data, backend, errors=errors)


def checks_df(paths: Paths, *, params: ScoreParams | None = None, backend: Backend = "pandas") -> Any:
    """One row per (run, check): how many tuples, and each metric's mean, median and fraction violated,
    computed from the same rows :func:`tuples_df` returns (so the two always agree).

    Columns: :data:`CHECK_COLUMNS`."""
    check_backend(backend)
    rows = []
    errors: list[str] = []
    for run, columns, values, violated in _tuple_sets(paths, False, params):
        row: dict[str, Any] = {
            "run": label(run),
            "forecaster": run.name,
            "check": columns.check.name,
            "tuples": len(columns),
            "unreadable": len(columns.errors),
        }
        for m in METRICS:
            name, v = METRIC_COLUMNS[m], values[m]
            row[f"{name}_mean"] = float(v.mean()) if len(v) else np.nan
            row[f"{name}_median"] = float(np.median(v)) if len(v) else np.nan
            row[f"{name}_violated"] = float(violated[m].mean()) if len(v) else np.nan
        rows.append(row)
        errors += [str(e) for e in columns.errors]
    return build(CHECK_COLUMNS, {c.name: [r[c.name] for r in rows] for c in CHECK_COLUMNS}, backend, errors=errors)
