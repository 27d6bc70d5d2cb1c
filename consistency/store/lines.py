"""The line files of a result read as columns: tuples with their forecasts and scores, scored questions.

A run's ``<Checker>.jsonl`` can hold hundreds of thousands of lines, and every reader (report, diff,
DataFrames) wants a few values per line, so the lines are parsed once (``pydantic_core``'s JSON parser,
with :mod:`json`'s reading as the fallback that words the errors) and kept as arrays. A line that cannot
be used is a :class:`~consistency.jsonl.LineError` naming the file and line, never a crash and never
silently dropped.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic_core import from_json

from ..checks import Check
from ..jsonl import LFS_POINTER, LineError, iter_json_lines, parse_line, utf16_encoding
from .records import METRICS


@dataclass
class TupleColumns:
    """One check's lines: row ``i`` is the ``i``-th usable line (file line ``line[i]``)."""

    check: Check
    path: Path
    line: np.ndarray  # int64: the line number in the file
    probs: np.ndarray  # (N, fields) float: the forecasts, in the check's field order
    question_ids: list[tuple[str, ...]]  # per row, the questions' ids in field order
    violation: dict[str, np.ndarray]  # metric -> float per row, NaN where the line carries no score of it
    passed: dict[str, np.ndarray]  # metric -> bool per row: the line's recorded verdict (True when absent)
    titles: list[tuple[str, ...]] | None = None  # with ``text=True``
    sources: list[tuple[str, ...]] | None = None  # with ``text=True``: each question's data_source ("" if none)
    errors: list[LineError] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.line)

    def ids(self) -> list[str]:
        """One key per tuple: its questions' ids joined (how two runs' tuples are paired)."""
        return ["|".join(q) for q in self.question_ids]

    @property
    def scored(self) -> np.ndarray:
        """Rows whose every metric is recorded on the line."""
        out = np.ones(len(self), dtype=bool)
        for values in self.violation.values():
            out &= ~np.isnan(values)
        return out


@dataclass
class GroundTruthColumns:
    """A ``ground_truth_results.jsonl``: one row per usable line, resolved or not."""

    path: Path
    line: np.ndarray  # int64
    question_ids: list[str]
    titles: list[str]
    probs: np.ndarray  # float
    resolution: np.ndarray  # 1.0 / 0.0, NaN when unresolved
    brier: np.ndarray  # as recorded, else computed from the resolution; NaN when unresolved
    errors: list[LineError] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.line)


def fast_json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | LineError]]:
    """:func:`consistency.jsonl.iter_json_lines`, parsed by ``pydantic_core`` (about three times faster);
    a line it refuses goes through ``json`` so the outcome and its wording are exactly that reader's."""
    path = Path(path)
    with path.open("rb") as fh:
        head = fh.read(4096)
        fh.seek(0)
        if utf16_encoding(head) or head.removeprefix(b"\xef\xbb\xbf").startswith(LFS_POINTER):
            yield from iter_json_lines(path)  # its first-line verdicts, worded once
            return
        for number, raw in enumerate(fh, start=1):
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            try:
                obj = from_json(raw)
            except ValueError:
                obj = None
            if not isinstance(obj, dict):
                obj = parse_line(path, number, raw)  # json's verdict and wording (None: a blank line)
            if obj is not None:
                yield number, obj


def read_tuple_columns(
    path: str | Path, check: Check, *, text: bool = False, metrics: Sequence[str] | None = None
) -> TupleColumns:
    """Every line of a ``<Checker>.jsonl`` of ``check`` (forecast lines, scored or not) as columns.

    A line whose fields lack a question id or a numeric forecast is a :class:`LineError`; a line without
    ``violation_data`` (the paper's unscored files, a bare forecast file) has NaN scores, for the caller
    to score. ``text`` also keeps each question's title and data source; ``metrics`` (default all three)
    limits the scores read."""
    path = Path(path)
    fields = tuple(check.field_names)
    wanted = tuple(metrics) if metrics is not None else METRICS
    numbers: list[int] = []
    ids: list[tuple[str, ...]] = []
    probs: list[list[float]] = []
    titles: list[tuple[str, ...]] = []
    sources: list[tuple[str, ...]] = []
    scores: dict[str, list[float]] = {m: [] for m in wanted}
    verdicts: dict[str, list[bool]] = {m: [] for m in wanted}
    errors: list[LineError] = []
    nan = math.nan
    for number, obj in fast_json_lines(path):
        if isinstance(obj, LineError):
            errors.append(obj)
            continue
        try:
            line = obj["line"]
            entries = [line[f] for f in fields]
            row_ids = tuple(str(e["question"]["id"]) for e in entries)
            row_probs = [float(e["forecast"]["prob"]) for e in entries]
            if text:
                row_titles = tuple(str(e["question"].get("title", "")) for e in entries)
                row_sources = tuple(str(e["question"].get("data_source") or "") for e in entries)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            errors.append(LineError(str(path), number, "line", f"not a scored tuple ({type(exc).__name__}: {exc})"))
            continue
        data = obj.get("violation_data")
        data = data if isinstance(data, dict) else {}
        for m in wanted:
            entry = data.get(m)
            value = entry.get("violation") if isinstance(entry, dict) else None
            ok = isinstance(value, int | float)
            scores[m].append(float(value) if ok else nan)
            verdicts[m].append(bool(entry.get("check", True)) if isinstance(entry, dict) else True)
        numbers.append(number)
        ids.append(row_ids)
        probs.append(row_probs)
        if text:
            titles.append(row_titles)
            sources.append(row_sources)
    return TupleColumns(
        check,
        path,
        np.asarray(numbers, dtype=np.int64),
        np.asarray(probs, dtype=float).reshape(len(probs), len(fields)),
        ids,
        {m: np.asarray(v, dtype=float) for m, v in scores.items()},
        {m: np.asarray(v, dtype=bool) for m, v in verdicts.items()},
        titles if text else None,
        sources if text else None,
        errors,
    )


def lines_at(path: str | Path, numbers: set[int]) -> dict[int, dict[str, Any]]:
    """The lines numbered ``numbers`` (1-based) of a JSONL file, parsed; the others are not parsed at all."""
    found: dict[int, dict[str, Any]] = {}
    if not numbers:
        return found
    last = max(numbers)
    with Path(path).open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if number in numbers:
                try:
                    obj = from_json(raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    found[number] = obj
            if number >= last:
                break
    return found


def read_ground_truth_columns(path: str | Path) -> GroundTruthColumns:
    """A ``ground_truth_results.jsonl`` (ours or the paper's) as columns.

    The forecast is the line's ``forecast.prob`` (or its ``prob``); the resolution the line's, else its
    question's; the Brier score as recorded, else computed from the resolution (NaN when unresolved)."""
    path = Path(path)
    numbers: list[int] = []
    ids: list[str] = []
    titles: list[str] = []
    probs: list[float] = []
    outcomes: list[float] = []
    briers: list[float] = []
    errors: list[LineError] = []
    for number, obj in fast_json_lines(path):
        if isinstance(obj, LineError):
            errors.append(obj)
            continue
        try:
            question = obj["question"]
            prob = float(obj["forecast"]["prob"] if obj.get("forecast") else obj["prob"])
            resolution = obj.get("resolution", question.get("resolution"))
            brier = obj.get("brier_score")
            if brier is None:
                brier = (prob - float(bool(resolution))) ** 2 if resolution is not None else None
            brier = nan_if_none(brier)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            errors.append(LineError(str(path), number, "line", f"not a scored question ({type(exc).__name__}: {exc})"))
            continue
        numbers.append(number)
        ids.append(str(question.get("id")))
        titles.append(str(question.get("title", "")))
        probs.append(prob)
        outcomes.append(math.nan if resolution is None else float(bool(resolution)))
        briers.append(brier)
    return GroundTruthColumns(
        path,
        np.asarray(numbers, dtype=np.int64),
        ids,
        titles,
        np.asarray(probs, dtype=float),
        np.asarray(outcomes, dtype=float),
        np.asarray(briers, dtype=float),
        errors,
    )


def nan_if_none(value: Any) -> float:
    return math.nan if value is None else float(value)
