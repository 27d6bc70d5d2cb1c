"""Forecast sets for ForecastBench's tournament, written so that its validation keeps every row.

One file per question set (due date): the required fields, one row per market question and per
dataset question and resolution date (ForecastBench's row identity, read back from our question ids),
``direction`` on combination rows, probabilities as forecast, named
``<due>.<organization>.<model in lower case, spaces as hyphens>.json`` as ForecastBench names files.
Before anything is written the set goes through :func:`.validate.validate_forecast_set` against the question set:
a row it would drop, a question missing from the set, or more than 5% of the set's questions
without a forecast (which keeps the file off the leaderboard) is a reason to refuse.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models import ForecastingQuestion
from .forecasts import Forecasts
from .formats import ForecastBenchError
from .keys import RowKey, key_of
from .validate import Validation, validate_forecast_set


@dataclass
class Submission:
    due: str
    file_name: str
    document: dict[str, Any]
    validation: Validation
    notes: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return self.validation.ok

    def write(self, directory: str | Path) -> Path:
        from ..jsonl import atomic_write

        path = Path(directory) / self.file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as fh:
            json.dump(self.document, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        return path


def file_name(due: str, organization: str, model: str) -> str:
    """ForecastBench's name for a forecast file (``get_forecast_filename``)."""
    for label, text in (("organization", organization), ("model", model)):
        if not text.strip() or any(c in text for c in "/\\\0"):
            raise ForecastBenchError(f"the {label} {text!r} cannot be part of a file name")
    return f"{due}.{organization}.{model.lower().replace(' ', '-')}.json"


@dataclass(frozen=True)
class QuestionSetRows:
    """The rows of one question set, as imported: what coverage is measured against."""

    due: str
    name: str  # e.g. 2026-08-02-llm.json
    keys: frozenset[RowKey]


def question_sets(questions: Iterable[ForecastingQuestion]) -> dict[str, QuestionSetRows]:
    """Per due date, the question set's name and row keys, from imported questions."""
    keys: dict[str, set[RowKey]] = {}
    names: dict[str, str] = {}
    for q in questions:
        key = key_of(q.id)
        if key is None:
            continue
        keys.setdefault(key.due, set()).add(key)
        fb = (q.metadata or {}).get("forecastbench") or {}
        names.setdefault(key.due, str(fb.get("question_set") or f"{key.due}-llm.json"))
    return {due: QuestionSetRows(due, names[due], frozenset(k)) for due, k in sorted(keys.items())}


_ABSENT = object()


def _row(key: RowKey, prob: float, reasoning: Any = _ABSENT) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": key.fb_id,
        "source": key.source,
        "forecast": prob,
        "resolution_date": key.resolution_date,
        "direction": list(key.direction) if key.direction else None,
    }
    if reasoning is not _ABSENT:
        row["reasoning"] = reasoning  # null where the forecaster gave none
    return row


def submissions(
    forecasts: Forecasts,
    sets: dict[str, QuestionSetRows],
    *,
    organization: str,
    model: str,
    model_organization: str | None = None,
    reasoning: bool = False,
) -> list[Submission]:
    """One forecast set per due date the forecasts cover, each validated against its question set."""
    out = []
    for due in sorted(forecasts.dues):
        if due not in sets:
            raise ForecastBenchError(
                f"{forecasts.origin} has forecasts for the question set of {due}, but the questions given do not "
                "include it (give the imported questions of that set)"
            )
        qset = sets[due]
        keys = sorted(k for k in forecasts.probs if k.due == due)
        rows = [_row(k, forecasts.probs[k], forecasts.reasoning.get(k)) if reasoning else _row(k, forecasts.probs[k])
                for k in keys]  # fmt: skip
        document = {
            "organization": organization,
            "model": model,
            "model_organization": model_organization or organization,
            "question_set": qset.name,
            "forecasts": rows,
        }
        notes = []
        if forecasts.other:
            notes.append(
                f"{forecasts.other} forecasts on questions that are not ForecastBench's (tuple fields) left out"
            )
        if forecasts.failed:
            notes.append(f"{forecasts.failed} ForecastBench questions the run failed to forecast")
        verdict = validate_forecast_set(document, set(qset.keys))
        out.append(Submission(due, file_name(due, organization, model), document, verdict, notes))
    return out
