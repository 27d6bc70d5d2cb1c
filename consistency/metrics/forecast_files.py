"""The import path the Python API page has always shown: scoring arrays and scoring files, re-exported.

The array math lives in :mod:`consistency.metrics.scoring` (pure: arrays in, arrays out) and the file
layer (reading, validating and writing forecast files) in :mod:`consistency.evaluation.scoring`; nothing
in the package imports this module.
"""

from __future__ import annotations

from ..evaluation.scoring import (
    NothingToScore,
    RunSkipped,
    ScoredFile,
    ScoreReport,
    ScoringError,
    forecast_files,
    is_checker_file,
    run_directories,
    score_file,
    score_path,
    score_runs,
    write_report,
    write_stats,
)
from .scoring import METRICS, CheckScores, ScoreParams, score_forecasts

__all__ = [
    "METRICS",
    "CheckScores",
    "NothingToScore",
    "RunSkipped",
    "ScoreParams",
    "ScoreReport",
    "ScoredFile",
    "ScoringError",
    "forecast_files",
    "is_checker_file",
    "run_directories",
    "score_file",
    "score_forecasts",
    "score_path",
    "score_runs",
    "write_report",
    "write_stats",
]
