"""What every frame shares: its declared columns, the two backends (pandas, polars) and the reading of paths.

Each frame function declares its columns once, as a tuple of :class:`Column` (name, type, meaning); the
frame is built from plain arrays by :func:`build`, which puts the columns in that order and gives each its
type in the backend asked for, so a frame's names and types never depend on what the files held. The
reference page (docs/reference/dataframes.md) is generated from the same declarations.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import InputError
from ..extras import install_hint
from ..store.runs import Run, RunError, read_run, result_paths

log = logging.getLogger("consistency.analysis")

Paths = str | Path | Sequence[str | Path]
Backend = Literal["pandas", "polars"]
BACKENDS: tuple[str, ...] = ("pandas", "polars")

#: The column types: each one's pandas dtype and polars type. ``Int64``, ``Float64`` and ``string`` are
#: pandas' nullable types (missing is ``<NA>``); in polars every type can hold a null. ``float64`` columns
#: hold NaN where a value is undefined (a mean of nothing), as numpy does.
DTYPES: dict[str, tuple[str, str]] = {
    "string": ("string", "String"),
    "category": ("category", "Categorical"),
    "int64": ("int64", "Int64"),
    "Int64": ("Int64", "Int64"),
    "float64": ("float64", "Float64"),
    "Float64": ("Float64", "Float64"),
    "bool": ("bool", "Boolean"),
    "datetime": ("datetime64[us, UTC]", "Datetime(us, UTC)"),
}


@dataclass(frozen=True)
class Column:
    """One column of a frame: its stable name, its type (a key of :data:`DTYPES`) and what it holds."""

    name: str
    dtype: str
    meaning: str

    def __post_init__(self) -> None:
        assert self.dtype in DTYPES, f"{self.name}: unknown type {self.dtype}"


Schema = tuple[Column, ...]
#: The first two columns of every frame of per-result rows: which result, whose forecasts.
WHO: Schema = (
    Column("run", "category", "The result's directory name."),
    Column("forecaster", "category", "The forecaster's recorded name."),
)


class AnalysisError(InputError):
    """A path that holds no result, a backend not installed; ``str()`` says which and what to do."""


def pandas_module() -> Any:
    try:
        import pandas
    except ImportError:
        raise AnalysisError(f"consistency.analysis needs pandas: {install_hint('analysis')}") from None
    return pandas


def polars_module() -> Any:
    try:
        import polars
    except ImportError:
        raise AnalysisError(f"backend='polars' needs polars: {install_hint('analysis-polars')}") from None
    return polars


def check_backend(backend: str) -> None:
    """Refuse an unknown backend, or one not installed, before any file is read."""
    if backend not in BACKENDS:
        raise AnalysisError(f"unknown backend {backend!r}; choose pandas or polars")
    pandas_module() if backend == "pandas" else polars_module()


def build(
    schema: Schema,
    data: Mapping[str, Any],
    backend: Backend = "pandas",
    *,
    errors: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> Any:
    """The frame of ``data`` (column name -> array or list, every column of ``schema``), typed as declared.

    ``errors`` (lines or results that could not be read) are logged and, in pandas, kept in the frame's
    ``attrs["errors"]`` (``notes`` in ``attrs["notes"]``); polars frames have no attributes, so there
    the log is where they are said."""
    missing = [c.name for c in schema if c.name not in data]
    extra = [name for name in data if name not in {c.name for c in schema}]
    assert not missing and not extra, f"columns not as declared: missing {missing}, undeclared {extra}"
    _log(errors)
    frame = _pandas(schema, data) if backend == "pandas" else _polars(schema, data)
    if backend == "pandas":
        frame.attrs["errors"] = list(errors)
        if notes:
            frame.attrs["notes"] = list(notes)
    return frame


def _log(errors: Sequence[str]) -> None:
    for error in errors[:5]:
        log.warning("skipped %s", error)
    if len(errors) > 5:
        log.warning("skipped %d more unreadable lines (listed in the frame's attrs['errors'])", len(errors) - 5)


def _pandas(schema: Schema, data: Mapping[str, Any]) -> Any:
    pd = pandas_module()
    columns: dict[str, Any] = {}
    for c in schema:
        values = data[c.name]
        if c.dtype == "datetime":
            stamps = pd.to_datetime(pd.Series(values, dtype=object), utc=True, format="ISO8601")
            columns[c.name] = stamps.astype(DTYPES["datetime"][0])  # the unit pandas infers varies with the values
        elif c.dtype == "category":
            columns[c.name] = pd.Categorical(np.asarray(values, dtype=object))
        elif c.dtype in ("Int64", "Float64"):
            columns[c.name] = pd.array(_nullable(values), dtype=c.dtype)
        elif c.dtype == "string":
            columns[c.name] = pd.array(np.asarray(values, dtype=object), dtype="string")
        else:
            columns[c.name] = np.asarray(values, dtype=c.dtype)
    return pd.DataFrame(columns, copy=False)


def _polars(schema: Schema, data: Mapping[str, Any]) -> Any:
    pl = polars_module()
    types = {
        "string": pl.String,
        "category": pl.Categorical,
        "int64": pl.Int64,
        "Int64": pl.Int64,
        "float64": pl.Float64,
        "Float64": pl.Float64,
        "bool": pl.Boolean,
    }
    series = []
    for c in schema:
        values = data[c.name]
        if c.dtype == "datetime":
            stamps = pl.Series(c.name, [None if v is None else str(v) for v in values], dtype=pl.String)
            series.append(stamps.str.to_datetime(time_zone="UTC", time_unit="us"))
        elif c.dtype in ("Int64", "Float64"):
            series.append(pl.Series(c.name, _nullable(values), dtype=types[c.dtype]))
        elif c.dtype in ("string", "category"):
            series.append(pl.Series(c.name, np.asarray(values, dtype=object), dtype=types[c.dtype]))
        else:
            series.append(pl.Series(c.name, np.asarray(values, dtype=c.dtype), dtype=types[c.dtype]))
    return pl.DataFrame(series)


def _nullable(values: Any) -> list[Any]:
    """Missing as None (NaN included): the nullable types' one missing value."""
    return [None if v is None or (isinstance(v, float) and v != v) else v for v in values]


def concat(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype=dtype)


# --------------------------------------------------------------------------- reading paths


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


def label(run: Run) -> str:
    """A result's name in the ``run`` column: its directory's name (a single file: the file's stem)."""
    return run.path.name if run.path.is_dir() else run.path.stem
