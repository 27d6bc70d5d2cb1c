"""Results as DataFrames, for analysis in a notebook: runs, checks, tuples, forecasts, ground truth, diffs,
leaderboards, repairs and attacks.

Each function takes one or more paths (a result directory, a folder of them, or a single result file) and
reads them through :func:`consistency.store.runs.read_run`, the reader every command uses (leaderboards:
the library calls of ``cc leaderboard``), so a frame holds exactly what the commands see. Frames of several
runs are stacked with a ``run`` column (the directory's name) and a ``forecaster`` column (the recorded
name), so one ``groupby`` compares them. Every column's name and type is declared once (the ``*_COLUMNS``
tuples, rendered on the reference page), whatever the files held. Lines that cannot be read are not dropped
silently: they are logged and listed in the frame's ``attrs["errors"]``.

``backend="pandas"`` (the ``analysis`` extra) is the default; ``backend="polars"`` returns a polars
DataFrame with the same columns (the ``analysis-polars`` extra; polars frames have no ``attrs``, so there
the log alone names what was skipped).
"""

from __future__ import annotations

from .attacks import ATTACK_COLUMNS, attacks_df
from .frame import BACKENDS, DTYPES, AnalysisError, Column, read_runs
from .ground_truth import DIFF_COLUMNS, GROUND_TRUTH_COLUMNS, diff_df, ground_truth_df
from .leaderboard import FORECASTBENCH_COLUMNS, LEADERBOARD_COLUMNS, forecastbench_df, leaderboard_df
from .repairs import REPAIR_COLUMNS, TOTAL, repairs_df
from .runs import RUN_COLUMNS, runs_df
from .tuples import (
    CHECK_COLUMNS,
    FORECAST_COLUMNS,
    METRIC_COLUMNS,
    TUPLE_COLUMNS,
    TUPLE_TEXT_COLUMNS,
    checks_df,
    forecasts_df,
    tuple_frame,
    tuples_df,
)

#: Every frame function and the columns it returns, in the order of the reference page.
FRAMES = {
    "runs_df": RUN_COLUMNS,
    "checks_df": CHECK_COLUMNS,
    "tuples_df": TUPLE_COLUMNS,
    "tuples_df(text=True)": TUPLE_TEXT_COLUMNS,
    "forecasts_df": FORECAST_COLUMNS,
    "ground_truth_df": GROUND_TRUTH_COLUMNS,
    "diff_df": DIFF_COLUMNS,
    "leaderboard_df": LEADERBOARD_COLUMNS,
    "forecastbench_df": FORECASTBENCH_COLUMNS,
    "repairs_df": REPAIR_COLUMNS,
    "attacks_df": ATTACK_COLUMNS,
}

__all__ = [
    "ATTACK_COLUMNS",
    "BACKENDS",
    "CHECK_COLUMNS",
    "DIFF_COLUMNS",
    "DTYPES",
    "FORECASTBENCH_COLUMNS",
    "FORECAST_COLUMNS",
    "FRAMES",
    "GROUND_TRUTH_COLUMNS",
    "LEADERBOARD_COLUMNS",
    "METRIC_COLUMNS",
    "REPAIR_COLUMNS",
    "RUN_COLUMNS",
    "TOTAL",
    "TUPLE_COLUMNS",
    "TUPLE_TEXT_COLUMNS",
    "AnalysisError",
    "Column",
    "attacks_df",
    "checks_df",
    "diff_df",
    "forecastbench_df",
    "forecasts_df",
    "ground_truth_df",
    "leaderboard_df",
    "read_runs",
    "repairs_df",
    "runs_df",
    "tuple_frame",
    "tuples_df",
]
