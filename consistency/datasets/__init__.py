"""Data the project ships: a consistency benchmark and a small scored sample (all written by us)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def sample_dir() -> Path:
    """``sample/``: ``tuples/<Checker>.jsonl`` (hand-written) and ``forecasts/<Checker>.jsonl``."""
    return Path(str(files(__package__).joinpath("sample")))


def tables_dir() -> Path:
    """``tables/``: ``forecasts.csv`` (a long table of six synthetic forecasters) and ``runs/<forecaster>/``."""
    return Path(str(files(__package__).joinpath("tables")))


def benchmark_dir() -> Path:
    """``benchmark/``: ``questions.jsonl`` (72 base questions) and ``tuples/<Checker>.jsonl``."""
    return Path(str(files(__package__).joinpath("benchmark")))


def typed_benchmark_dir() -> Path:
    """``typed/``: ``questions.jsonl`` (8 multiple-choice, 8 numeric and 2 date questions, each with its
    ``metadata.provenance``) and ``tuples/<Checker>.jsonl`` of PARTITION<k>, MC_BINARY, CDF_THRESHOLDS and
    NUMERIC_PARAPHRASE, and ``forecasts/<Checker>.jsonl``: a synthetic forecaster's incoherent answers to them, for
    examples (``python -m consistency.datasets.make_typed`` writes both)."""
    return Path(str(files(__package__).joinpath("typed")))
