"""Results as pandas DataFrames, for analysis in a notebook: runs, checks, tuples, forecasts, ground truth.

Each function takes one or more paths (a result directory, a folder of them, or a single result file) and
reads them through :func:`consistency.store.runs.read_run`, the reader every command uses, so a frame holds
exactly what ``cc report`` and ``cc diff`` see. Frames of several runs are stacked with a ``run`` column
(the directory's name) and a ``forecaster`` column (the recorded name), so one ``groupby`` compares them.
Column names and types are stable and documented in the Python API page; the metric columns are named
``arbitrage``, ``arbitrage_scaled`` and ``frequentist`` (``default``, ``default_scaled`` and ``frequentist``
in the files). Lines that cannot be read are not dropped silently: they are logged and listed in the
frame's ``attrs["errors"]``. pandas comes with the ``analysis`` extra (and ``dev``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InputError
from .metrics.scoring import METRICS, ScoreParams, score_forecasts
from .store.lines import TupleColumns
from .store.runs import Run, RunError, read_run, result_paths

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

#: The frames' name of each metric of the files (``violation_data`` keys).
METRIC_COLUMNS = {"default": "arbitrage", "default_scaled": "arbitrage_scaled", "frequentist": "frequentist"}

Paths = str | Path | Sequence[str | Path]


class AnalysisError(InputError):
    """A path that holds no result, or pandas missing; ``str()`` says which and what to do."""


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise AnalysisError("consistency.analysis needs pandas: pip install 'forecast-consistency[analysis]'") from None
    return pandas


def read_runs(paths: Paths) -> list[Run]:
    """Every result under ``paths``: each path is a result itself or a folder of results one level down."""
    given = [paths] if isinstance(paths, str | Path) else list(paths)
    if not given:
        raise AnalysisError("no paths given: name a run directory, a folder of runs, or a result file")
    runs: list[Run] = []
    for path in given:
        found = result_paths(Path(path))
        if not found:
            raise AnalysisError(f"{path}: neither a result nor a folder of results")
        try:
            runs += [read_run(p) for p in found]
        except RunError as exc:
            raise AnalysisError(str(exc)) from None
    return runs


def _label(run: Run) -> str:
    return run.path.name if run.path.is_dir() else run.path.stem


def _frame(columns: dict[str, Any], errors: list[str]) -> pd.DataFrame:
    pd = _pandas()
    df = pd.DataFrame(columns)
    for name in ("run", "forecaster", "check", "field", "source"):
        if name in df.columns:
            df[name] = df[name].astype("category")
    df.attrs["errors"] = errors
    for error in errors[:5]:
        log.warning("skipped %s", error)
    if len(errors) > 5:
        log.warning("skipped %d more unreadable lines (listed in the frame's attrs['errors'])", len(errors) - 5)
    return df


# --------------------------------------------------------------------------- one row per run


def runs_df(paths: Paths) -> pd.DataFrame:
    """One row per result: what it is, who made it, when, its status and cost, and its size.

    Columns: ``run``, ``path``, ``kind``, ``forecaster``, ``forecaster_class``, ``status``, ``started``,
    ``ended`` (UTC timestamps), ``consistency_version``, ``checks`` (forecast files), ``questions``,
    ``failed_questions``, ``calls``, ``cost`` (USD). Absent values are missing (``<NA>``), never 0."""
    pd = _pandas()
    rows = []
    for run in read_runs(paths):
        meta, who = run.meta, run.forecaster
        totals = meta.totals if meta and meta.totals else None
        rows.append(
            {
                "run": _label(run),
                "path": str(run.path),
                "kind": str(run.kind),
                "forecaster": run.name,
                "forecaster_class": who.forecaster_class if who else None,
                "status": meta.status if meta else None,
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
    df = pd.DataFrame(rows, columns=list(_RUN_TYPES))
    return df.astype(_RUN_TYPES).assign(
        started=pd.to_datetime(df["started"], utc=True, format="ISO8601"),
        ended=pd.to_datetime(df["ended"], utc=True, format="ISO8601"),
    )


_RUN_TYPES = {
    "run": "string",
    "path": "string",
    "kind": "category",
    "forecaster": "string",
    "forecaster_class": "string",
    "status": "string",
    "started": "object",
    "ended": "object",
    "consistency_version": "string",
    "checks": "Int64",
    "questions": "Int64",
    "failed_questions": "Int64",
    "calls": "Int64",
    "cost": "Float64",
}


# --------------------------------------------------------------------------- tuples and their scores


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
) -> pd.DataFrame:
    """The frame of :func:`tuples_df` from columns already read: ``(run, forecaster, columns, violations,
    verdicts)`` per check file. Kept apart so its cost can be measured without the reading."""
    parts: dict[str, list[Any]] = {k: [] for k in ("run", "forecaster", "check", "line", "tuple")}
    metric_parts: dict[str, list[np.ndarray]] = {}
    text_parts: dict[str, list[Any]] = {"source": [], "title": []}
    errors: list[str] = []
    has_text = True
    for label, forecaster, columns, values, violated in sets:
        n = len(columns)
        parts["run"].append(np.full(n, label, dtype=object))
        parts["forecaster"].append(np.full(n, forecaster, dtype=object))
        parts["check"].append(np.full(n, columns.check.name, dtype=object))
        parts["line"].append(columns.line)
        parts["tuple"].append(np.asarray(columns.ids(), dtype=object))
        for m in METRICS:
            metric_parts.setdefault(METRIC_COLUMNS[m], []).append(values[m])
            metric_parts.setdefault(METRIC_COLUMNS[m] + "_violated", []).append(violated[m])
        if columns.sources is None or columns.titles is None:
            has_text = False
        else:
            text_parts["source"].append(np.asarray([s[0] for s in columns.sources], dtype=object))
            text_parts["title"].append(np.asarray([t[0] for t in columns.titles], dtype=object))
        errors += [str(e) for e in columns.errors]
    out: dict[str, Any] = {k: _concat(v, object) for k, v in parts.items()}
    out["line"] = _concat(parts["line"], np.int64)
    for name, arrays in metric_parts.items():
        out[name] = _concat(arrays, bool if name.endswith("_violated") else float)
    if not metric_parts:
        for m in METRICS:
            out[METRIC_COLUMNS[m]] = np.empty(0, dtype=float)
            out[METRIC_COLUMNS[m] + "_violated"] = np.empty(0, dtype=bool)
    if has_text and parts["run"]:
        out["source"] = _concat(text_parts["source"], object)
        out["title"] = _concat(text_parts["title"], object)
    return _frame(out, errors)


def _concat(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype=dtype)


def tuples_df(paths: Paths, *, text: bool = False, params: ScoreParams | None = None) -> pd.DataFrame:
    """One row per tuple of every check of every run: its violation under each metric and whether it counts
    as violated.

    Columns: ``run``, ``forecaster``, ``check`` (categories), ``line`` (the line in its file), ``tuple`` (its
    questions' ids joined by ``|``: the key that pairs two runs' tuples), ``arbitrage``, ``arbitrage_scaled``,
    ``frequentist`` (floats) and ``<metric>_violated`` (bools). With ``text=True`` also ``source`` (the first
    question's ``data_source``, a category) and ``title`` (its title). Lines carrying no scores (the paper's
    files) are scored with ``params`` (default: ``cc score``'s), as the report does."""
    return tuple_frame((_label(r), r.name, c, v, x) for r, c, v, x in _tuple_sets(paths, text, params))


def forecasts_df(paths: Paths, *, params: ScoreParams | None = None) -> pd.DataFrame:
    """One row per forecast within a tuple: each question a tuple asked about, the probability given, and
    its tuple's violation, so ``groupby("question_id")`` answers per-question questions (which questions sit
    in the most violated tuples, how far one question's forecasts move between tuples).

    Columns: ``run``, ``forecaster``, ``check``, ``line``, ``field`` (the tuple's field: ``P``, ``not_P``...),
    ``question_id``, ``title``, ``source``, ``prob``, ``arbitrage``, ``frequentist``."""
    parts: dict[str, list[np.ndarray]] = {}
    errors: list[str] = []

    def add(name: str, values: np.ndarray) -> None:
        parts.setdefault(name, []).append(values)

    for run, columns, values, _violated in _tuple_sets(paths, True, params):
        fields = list(columns.check.field_names)
        n, k = len(columns), len(fields)
        add("run", np.full(n * k, _label(run), dtype=object))
        add("forecaster", np.full(n * k, run.name, dtype=object))
        add("check", np.full(n * k, columns.check.name, dtype=object))
        add("line", np.repeat(columns.line, k))
        add("field", np.tile(np.asarray(fields, dtype=object), n))
        add("question_id", np.asarray([q for row in columns.question_ids for q in row], dtype=object))
        add("title", np.asarray([t for row in columns.titles or [] for t in row], dtype=object))
        add("source", np.asarray([s for row in columns.sources or [] for s in row], dtype=object))
        add("prob", columns.probs.reshape(-1))
        add("arbitrage", np.repeat(values["default"], k))
        add("frequentist", np.repeat(values["frequentist"], k))
        errors += [str(e) for e in columns.errors]
    kinds = {"line": np.int64, "prob": float, "arbitrage": float, "frequentist": float}
    names = ("run", "forecaster", "check", "line", "field", "question_id", "title", "source", "prob")
    out = {name: _concat(parts.get(name, []), kinds.get(name, object)) for name in (*names, "arbitrage", "frequentist")}
    return _frame(out, errors)


def checks_df(paths: Paths, *, params: ScoreParams | None = None) -> pd.DataFrame:
    """One row per (run, check): how many tuples, and each metric's mean, median and fraction violated,
    computed from the same rows :func:`tuples_df` returns (so the two always agree).

    Columns: ``run``, ``forecaster``, ``check``, ``tuples``, ``unreadable`` (lines skipped), and per metric
    ``<metric>_mean``, ``<metric>_median``, ``<metric>_violated`` (a fraction in [0, 1])."""
    rows = []
    errors: list[str] = []
    for run, columns, values, violated in _tuple_sets(paths, False, params):
        row: dict[str, Any] = {
            "run": _label(run),
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
    metric_cols = [f"{METRIC_COLUMNS[m]}_{s}" for m in METRICS for s in ("mean", "median", "violated")]
    columns_order = ["run", "forecaster", "check", "tuples", "unreadable", *metric_cols]
    return _frame({c: [r[c] for r in rows] for c in columns_order}, errors).astype(
        {"tuples": "int64", "unreadable": "int64", **dict.fromkeys(metric_cols, "float64")}
    )


def ground_truth_df(paths: Paths) -> pd.DataFrame:
    """One row per scored question of every ground-truth result (ours, or the paper's files).

    Columns: ``run``, ``forecaster``, ``line``, ``question_id``, ``title``, ``prob``, ``resolution``
    (1.0 / 0.0, NaN when unresolved), ``brier`` (NaN when unresolved). Results without ground truth are
    skipped; none at all is an :class:`AnalysisError`."""
    parts: dict[str, list[np.ndarray]] = {}
    errors: list[str] = []
    found = False
    for run in read_runs(paths):
        if run.ground_truth_file is None:
            continue
        found = True
        columns = run.ground_truth()
        n = len(columns)
        for name, values in (
            ("run", np.full(n, _label(run), dtype=object)),
            ("forecaster", np.full(n, run.name, dtype=object)),
            ("line", columns.line),
            ("question_id", np.asarray(columns.question_ids, dtype=object)),
            ("title", np.asarray(columns.titles, dtype=object)),
            ("prob", columns.probs),
            ("resolution", columns.resolution),
            ("brier", columns.brier),
        ):
            parts.setdefault(name, []).append(values)
        errors += [str(e) for e in columns.errors]
    if not found:
        raise AnalysisError("no ground-truth results among the paths (cc evaluate --questions writes them)")
    kinds = {"line": np.int64, "prob": float, "resolution": float, "brier": float}
    return _frame({name: _concat(v, kinds.get(name, object)) for name, v in parts.items()}, errors)


def diff_df(a: str | Path, b: str | Path, *, metric: str = "default", **options: Any) -> pd.DataFrame:
    """``cc diff A B`` as rows: one per check (ground truth: per question source) and one ``overall``.

    Columns: ``group``, ``n`` (shared items), ``mean_a``, ``mean_b``, ``diff`` (B − A: positive when B
    is worse), ``ci_low``, ``ci_high`` (bootstrap), ``better``, ``worse``, ``same`` (items), ``p_sign``,
    ``p_wilcoxon`` and ``significantly_worse`` (as ``cc diff --fail-if-worse`` decides it). ``options`` are
    :func:`consistency.evaluation.diff.diff_runs`'s (``resamples``, ``seed``, ``level``...)."""
    from dataclasses import asdict

    from .evaluation.diff import diff_runs

    pd = _pandas()
    result = diff_runs(a, b, metric=metric, **options)
    worse = set(result.worse())  # each group at its Bonferroni level, overall at the level
    rows = [
        {"group": name, **asdict(d), "significantly_worse": name in worse}
        for name, d in [*result.groups.items(), ("overall", result.overall)]
    ]
    df = pd.DataFrame(rows)
    df.attrs["errors"] = [str(e) for e in (*result.a.skipped, *result.b.skipped)]
    df.attrs["notes"] = list(result.notes)
    return df


__all__ = [
    "METRIC_COLUMNS",
    "AnalysisError",
    "checks_df",
    "diff_df",
    "forecasts_df",
    "ground_truth_df",
    "read_runs",
    "runs_df",
    "tuple_frame",
    "tuples_df",
]
