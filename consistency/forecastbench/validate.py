"""ForecastBench's rules for a forecast set (a submission), as its own code applies them.

From ``src/orchestration/_io.py:read_forecast_file``: the file is a JSON object with non-empty
``organization``, ``model``, ``model_organization``, ``question_set`` (a name holding the due date)
and ``forecasts``; otherwise it is rejected. From ``src/resolve/_prepare.py``: rows with an unknown
source, a missing or out-of-range forecast, or (dataset questions) a resolution date that is not the
due date plus an allowed horizon are dropped; a market row's resolution date is ignored; two dataset
rows with the same id, source, resolution date and direction reject the file. From the leaderboard:
questions without a forecast are imputed at 0.5, and more than 5% imputed overall, among market
questions or among dataset questions keeps the file off the leaderboard. Given the question set,
:func:`validate` also reports rows for questions that are not in it (they would never be scored).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from .formats import DATASET_SOURCES, SOURCES, allowed_resolution_dates, due_date_of
from .keys import RowKey, make_key

#: More than this share of imputed (missing) forecasts keeps a file off the leaderboard.
IMPUTED_CUTOFF = 0.05
REQUIRED = ("organization", "model", "model_organization", "question_set", "forecasts")

Severity = Literal["rejects", "drops", "excludes", "ignored"]


@dataclass(frozen=True)
class Finding:
    severity: Severity  # rejects the file / drops the row / excludes from the leaderboard / row never scored
    where: str  # "forecasts[12]" or "file"
    reason: str

    def __str__(self) -> str:
        verb = {"rejects": "rejects the file", "drops": "row dropped", "ignored": "never scored",
                "excludes": "more than 5% imputed: off the leaderboard"}[self.severity]  # fmt: skip
        return f"{self.where}: {self.reason} ({verb})"


@dataclass(frozen=True)
class Coverage:
    """Forecasts missing among the set's (non-combination) rows, overall and per kind."""

    rows: dict[str, int]  # overall / market / dataset
    missing: dict[str, int]

    def share(self, part: str) -> float:
        return self.missing[part] / self.rows[part] if self.rows[part] else 0.0

    def over(self) -> list[str]:
        return [p for p in ("overall", "market", "dataset") if self.share(p) > IMPUTED_CUTOFF]


@dataclass
class Validation:
    due: str | None = None
    rows: dict[RowKey, float] = field(default_factory=dict)  # what ForecastBench keeps
    reasoning: dict[RowKey, str] = field(default_factory=dict)  # the rows' reasoning (ForecastBench discards it)
    findings: list[Finding] = field(default_factory=list)
    coverage: Coverage | None = None

    @property
    def rejected(self) -> bool:
        return any(f.severity == "rejects" for f in self.findings)

    @property
    def ok(self) -> bool:
        """Accepted whole: nothing rejected, dropped, ignored, and on the leaderboard."""
        return not self.findings


def _forecast(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and 0.0 <= value <= 1.0 else None


def _direction(value: Any) -> tuple[int, ...] | str | None:
    if value in (None, [], ()):
        return None
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(v in (1, -1) for v in value):
        return tuple(int(v) for v in value)
    return f"direction must be null or a pair of 1 and -1, got {value!r}"


def _row(i: int, row: Any, due: str, allowed: set[str]) -> tuple[RowKey, float] | Finding:
    """A row's key and forecast, or why ForecastBench drops it (the common case first: this runs per row)."""
    if not isinstance(row, dict):
        return Finding("drops", f"forecasts[{i}]", "not a JSON object")
    source = row.get("source")
    lower = source.lower() if isinstance(source, str) else None
    if lower not in SOURCES:
        return Finding("drops", f"forecasts[{i}]", f"unknown source {source!r}")
    prob = _forecast(row.get("forecast"))
    if prob is None:
        return Finding("drops", f"forecasts[{i}]", f"forecast {row.get('forecast')!r} is not a number in [0, 1]")
    raw_id = row.get("id")
    if type(raw_id) is str and raw_id:
        ids: tuple[str, ...] = (raw_id,)
    elif isinstance(raw_id, list) and len(raw_id) == 2:
        ids = tuple(str(i) for i in raw_id)
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) and str(raw_id):
        ids = (str(raw_id),)
    else:
        return Finding("drops", f"forecasts[{i}]", f"id {raw_id!r} is neither an id nor a pair of ids")
    direction = row.get("direction")
    if direction is not None:
        direction = _direction(direction)
        if isinstance(direction, str):
            return Finding("drops", f"forecasts[{i}]", direction)
    day = None
    if lower in DATASET_SOURCES:
        given = row.get("resolution_date")
        day = given[:10] if isinstance(given, str) else None
        if day not in allowed:
            return Finding(
                "drops",
                f"forecasts[{i}]",
                f"resolution date {given!r} is not the due date {due} plus 7, 30, 90, 180, 365, "
                "1095, 1825 or 3650 days",
            )
    return make_key(due, lower, ids, day, direction), prob


def validate_forecast_set(doc: Any, questions: set[RowKey] | None = None) -> Validation:
    """Check a forecast set as ForecastBench would; with ``questions`` (the set's row keys), also its coverage."""
    out = Validation()
    if not isinstance(doc, dict):
        out.findings.append(Finding("rejects", "file", "not a JSON object"))
        return out
    missing = [k for k in REQUIRED if not doc.get(k)]
    if missing:
        out.findings.append(Finding("rejects", "file", f"missing or empty required field(s): {', '.join(missing)}"))
    due = due_date_of(doc.get("question_set")) if isinstance(doc.get("question_set"), str) else None
    if doc.get("question_set") and due is None:
        out.findings.append(Finding("rejects", "question_set", f"{doc.get('question_set')!r} holds no date YYYY-MM-DD"))
    forecasts = doc.get("forecasts")
    if forecasts and not isinstance(forecasts, list):
        out.findings.append(Finding("rejects", "forecasts", "must be a list of forecasts"))
    if out.rejected or due is None:
        return out
    out.due = due
    allowed = set(allowed_resolution_dates(due))
    seen: dict[RowKey, int] = {}
    for i, row in enumerate(forecasts):
        found = _row(i, row, due, allowed)
        if isinstance(found, Finding):
            out.findings.append(found)
            continue
        key, prob = found
        if key in seen:
            severity: Severity = "drops" if key.market else "rejects"
            what = "the file is rejected" if not key.market else "both would be joined to the question"
            out.findings.append(Finding(severity, f"forecasts[{i}]", f"repeats forecasts[{seen[key]}]: {what}"))
            continue
        seen[key] = i
        out.rows[key] = prob
        if row.get("reasoning"):
            out.reasoning[key] = str(row["reasoning"])
    if questions is not None:
        _coverage(out, questions, seen)
    return out


def _coverage(out: Validation, questions: set[RowKey], index: dict[RowKey, int]) -> None:
    for key in out.rows:
        if key not in questions:
            at = f" at {key.resolution_date}" if key.resolution_date else ""
            out.findings.append(
                Finding("ignored", f"forecasts[{index[key]}]", f"no {key.source} question {key.fb_id}{at} in the set")
            )
    singles = [k for k in questions if not k.combination]
    parts = {"overall": singles, "market": [k for k in singles if k.market],
             "dataset": [k for k in singles if not k.market]}  # fmt: skip
    have = set(out.rows)
    out.coverage = Coverage(
        {p: len(keys) for p, keys in parts.items()}, {p: sum(k not in have for k in keys) for p, keys in parts.items()}
    )
    for part in out.coverage.over():
        n, m = out.coverage.rows[part], out.coverage.missing[part]
        label = {"overall": "questions", "market": "market questions", "dataset": "dataset questions (per date)"}[part]
        out.findings.append(
            Finding("excludes", "file", f"{m} of {n} {label} ({100 * m / n:.1f}%) have no forecast; "
                    "ForecastBench imputes 0.5 for them")
        )  # fmt: skip
