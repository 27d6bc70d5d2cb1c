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


#: How a command names a bundled tuple set instead of a path: ``-t bundled:typed``.
BUNDLED = "bundled:"


def bundled_sets() -> dict[str, Path]:
    """The bundled tuple sets by name: ``default`` (the yes/no checks' benchmark, what ``cc evaluate`` runs without
    ``-t``) and ``typed`` (the multiple-choice, numeric and date questions' checks)."""
    return {"default": benchmark_dir() / "tuples", "typed": typed_benchmark_dir() / "tuples"}


def tuples_source(source: str | Path | None) -> Path | None:
    """The directory ``bundled:NAME`` names (an unknown name is a ValueError listing the names), else ``source``
    as a path (None stays None: the caller's default)."""
    if source is None:
        return None
    text = str(source)
    if not text.startswith(BUNDLED):
        return Path(source)
    sets = bundled_sets()
    name = text.removeprefix(BUNDLED)
    if name not in sets:
        raise ValueError(
            f"{text}: no such bundled tuple set; the bundled sets are {', '.join(BUNDLED + n for n in sets)}"
        )
    return sets[name]
