"""ForecastBench's published files as they are: question sets, resolution sets and forecast sets.

Field names and meanings follow ForecastBench's datasets repository and the code that reads them
(``src/orchestration/_io.py``, ``src/resolve/_prepare.py``). Each file is read whole; an entry that
cannot be used is a :class:`Problem` naming the file, the entry and the reason, and the other
entries are kept. Combination questions (sets up to 2025-08-31) have a list of two ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ..errors import InputError
from ..jsonl import LFS_MESSAGE, LFS_POINTER, TOO_DEEP, parse_json

MARKET_SOURCES = ("infer", "manifold", "metaculus", "polymarket")
DATASET_SOURCES = ("acled", "dbnomics", "fred", "wikipedia", "yfinance")
SOURCES = MARKET_SOURCES + DATASET_SOURCES
#: The horizons (days after the forecast due date) a dataset question may resolve at.
HORIZONS = (7, 30, 90, 180, 365, 1095, 1825, 3650)
NA = "N/A"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class ForecastBenchError(InputError):
    """A file that cannot be read as a ForecastBench file at all (one sentence, naming it)."""


@dataclass(frozen=True)
class Problem:
    """Why one entry of a file was left out: ``file: where: reason``."""

    file: str
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.reason}"


def is_market(source: str) -> bool:
    return source in MARKET_SOURCES


def due_date_of(name: str) -> str | None:
    """The ``YYYY-MM-DD`` in a question-set name, as ForecastBench reads the due date of a forecast file."""
    found = _DATE.search(name or "")
    return found.group(0) if found else None


def allowed_resolution_dates(due: str) -> tuple[str, ...]:
    start = date.fromisoformat(due)
    return tuple((start + timedelta(days=h)).isoformat() for h in HORIZONS)


def _ids(value: Any) -> str | list[str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (str, int)) for v in value):
        return [str(v) for v in value]
    if isinstance(value, str) and value:
        return value
    raise ValueError("id must be a non-empty string, or a list of two ids (a combination question)")


def _source(value: Any) -> str:
    if not isinstance(value, str) or value.strip().lower() not in SOURCES:
        raise ValueError(f"unknown source {value!r} (ForecastBench's sources: {', '.join(SOURCES)})")
    return value.strip().lower()


def _iso_day(value: Any) -> str:
    if isinstance(value, str) and _DATE.fullmatch(value[:10]):
        try:
            return date.fromisoformat(value[:10]).isoformat()
        except ValueError:
            pass
    raise ValueError(f"expected a date YYYY-MM-DD, got {value!r}")


class SetQuestion(BaseModel):
    """One entry of a question set; unknown keys are kept."""

    model_config = ConfigDict(extra="allow")

    id: str | list[str]
    source: str
    question: str
    resolution_criteria: str = ""
    background: str = ""
    market_info_open_datetime: str = NA
    market_info_close_datetime: str = NA
    market_info_resolution_criteria: str = NA
    url: str = NA
    freeze_datetime: str = NA
    freeze_datetime_value: str | float | None = None
    freeze_datetime_value_explanation: str = NA
    source_intro: str = ""
    combination_of: list[dict[str, Any]] | str = NA
    resolution_dates: list[str] | str = NA

    _ids = field_validator("id", mode="before")(classmethod(lambda cls, v: _ids(v)))
    _source = field_validator("source", mode="before")(classmethod(lambda cls, v: _source(v)))

    @field_validator("question")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question text is empty")
        return value

    @field_validator("resolution_dates", mode="before")
    @classmethod
    def _dates(cls, value: Any) -> Any:
        if value in (None, NA):
            return NA
        if not isinstance(value, list):
            raise ValueError(f"expected a list of dates or {NA!r}, got {value!r}")
        return [_iso_day(v) for v in value]

    @property
    def is_combination(self) -> bool:
        return isinstance(self.id, list)


class ResolutionRow(BaseModel):
    """One row of a resolution set: a question (at one resolution date for dataset questions)."""

    model_config = ConfigDict(extra="allow")

    id: str | list[str]
    source: str
    direction: tuple[int, int] | None = None
    resolution_date: str
    resolved_to: float
    resolved: bool

    _ids = field_validator("id", mode="before")(classmethod(lambda cls, v: _ids(v)))
    _source = field_validator("source", mode="before")(classmethod(lambda cls, v: _source(v)))
    _day = field_validator("resolution_date", mode="before")(classmethod(lambda cls, v: _iso_day(v)))

    @field_validator("direction", mode="before")
    @classmethod
    def _direction(cls, value: Any) -> Any:
        if value in (None, [], ()):
            return None
        if isinstance(value, (list, tuple)) and len(value) == 2 and all(v in (1, -1) for v in value):
            return tuple(int(v) for v in value)
        raise ValueError(f"direction must be null or a pair of 1 and -1, got {value!r}")

    @field_validator("resolved_to")
    @classmethod
    def _finite(cls, value: float) -> float:
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("resolved_to is not a number")
        return value


@dataclass
class QuestionSet:
    file: str
    due: str
    name: str  # the ``question_set`` file name, e.g. 2026-08-02-llm.json
    questions: list[SetQuestion]
    problems: list[Problem] = field(default_factory=list)


@dataclass
class ResolutionSet:
    file: str
    due: str
    question_set: str
    rows: list[ResolutionRow]
    problems: list[Problem] = field(default_factory=list)


def load_document(path: str | Path, text: str | bytes | None = None) -> dict[str, Any]:
    """A ForecastBench JSON document (an object); a Git LFS pointer or anything else is one sentence."""
    path = Path(path)
    try:
        raw = path.read_bytes() if text is None else text
    except OSError as exc:
        raise ForecastBenchError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    head = raw[:60] if isinstance(raw, bytes) else raw[:60].encode()
    if head.startswith(LFS_POINTER):
        raise ForecastBenchError(f"{path}: {LFS_MESSAGE}")
    try:
        doc = parse_json(raw)
    except RecursionError:
        raise ForecastBenchError(f"{path}: {TOO_DEEP}") from None
    except ValueError as exc:
        raise ForecastBenchError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ForecastBenchError(f"{path}: expected a JSON object, got a {type(doc).__name__}")
    return doc


def kind_of(doc: dict[str, Any]) -> str | None:
    """``question_set``, ``resolution_set`` or ``forecast_set`` by the keys present; None if none fits."""
    if isinstance(doc.get("questions"), list):
        return "question_set"
    if isinstance(doc.get("resolutions"), list):
        return "resolution_set"
    if "forecasts" in doc and ("organization" in doc or "model" in doc):
        return "forecast_set"
    return None


def _one_line(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors(include_url=False):
        where = ".".join(str(p) for p in e["loc"])
        message = e["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def _label(entry: Any, i: int, key: str) -> str:
    shown = entry.get("id") if isinstance(entry, dict) else None
    return f"{key}[{i}]" + (f" (id {shown})" if isinstance(shown, (str, int)) else "")


def _header(doc: dict[str, Any], file: str) -> str:
    due = doc.get("forecast_due_date")
    if not isinstance(due, str) or not _DATE.fullmatch(due):
        raise ForecastBenchError(f"{file}: forecast_due_date must be a date YYYY-MM-DD, got {due!r}")
    return due


def _entries(entries: Any, model: type[BaseModel], file: str, key: str, check) -> tuple[list, list[Problem]]:
    """Validate each entry with ``model``, then ``check(i, item)`` (a reason, or None to keep it)."""
    kept, problems = [], []
    for i, entry in enumerate(entries or []):
        try:
            item = model.model_validate(entry)
            reason = check(i, item)
        except ValidationError as exc:
            reason = _one_line(exc)
        if reason is None:
            kept.append(item)
        else:
            problems.append(Problem(file, _label(entry, i, key), reason))
    return kept, problems


def question_set(doc: dict[str, Any], file: str) -> QuestionSet:
    """Parse a question set; entries that fail are problems, the rest are kept."""
    due = _header(doc, file)
    name = doc.get("question_set") if isinstance(doc.get("question_set"), str) else Path(file).name
    seen: dict[tuple[str, str], int] = {}

    def check(i: int, q: SetQuestion) -> str | None:
        reason = _question_problem(q, due)
        key = (str(q.id), q.source)
        if reason is None and key in seen:
            return f"repeats questions[{seen[key]}] (same id and source)"
        if reason is None:
            seen[key] = i
        return reason

    kept, problems = _entries(doc.get("questions"), SetQuestion, file, "questions", check)
    return QuestionSet(file, due, name, kept, problems)


def _question_problem(q: SetQuestion, due: str) -> str | None:
    if q.is_combination:
        parts = q.combination_of
        if not (isinstance(parts, list) and len(parts) == 2 and all(isinstance(p, dict) for p in parts)):
            return "a combination question needs combination_of: the two questions it combines"
    if not is_market(q.source):
        if not isinstance(q.resolution_dates, list) or not q.resolution_dates:
            return "a dataset question needs resolution_dates"
        allowed = set(allowed_resolution_dates(due))
        odd = [d for d in q.resolution_dates if d not in allowed]
        if odd:
            return (
                f"resolution date {odd[0]} is not the due date {due} plus one of {', '.join(map(str, HORIZONS))} days"
            )
    return None


def _row_problem(_: int, row: ResolutionRow) -> str | None:
    if row.resolved and row.resolved_to not in (0.0, 1.0):
        return f"resolved, but to {row.resolved_to} (not 0 or 1)"
    if isinstance(row.id, list) and row.direction is None:
        return "a combination row (two ids) needs a direction"
    if not isinstance(row.id, list) and row.direction is not None:
        return "direction on a single question"
    return None


def resolution_set(doc: dict[str, Any], file: str) -> ResolutionSet:
    """Parse a resolution set; rows that fail are problems, the rest are kept."""
    due = _header(doc, file)
    name = doc.get("question_set") if isinstance(doc.get("question_set"), str) else ""
    kept, problems = _entries(doc.get("resolutions"), ResolutionRow, file, "resolutions", _row_problem)
    return ResolutionSet(file, due, name, kept, problems)
