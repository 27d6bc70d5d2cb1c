"""The data that flows between stages: questions, forecasts, tuples and forecast lines.

Field names and JSON shapes follow the consistency-checks paper's published files, so those
files load as they are: dates as ``2024-07-15 22:20:00`` or ``2028-01-01T00:00:00Z`` (naive
ones are taken as UTC), ``data_source`` free text, unknown keys kept.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, field_serializer, field_validator

from .checks import Check

QuestionType = Literal["binary", "conditional_binary"]


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def format_datetime(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with a ``Z``, as the paper's tuple files write dates."""
    return None if value is None else _utc(value).isoformat().replace("+00:00", "Z")


class ForecastingQuestion(BaseModel):
    """A forecasting question (paper appendix C.1). Only title and body are shown to forecasters."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    title: str = Field(min_length=1)
    body: str = ""
    resolution_date: datetime | None = None
    question_type: QuestionType = "binary"
    data_source: str | None = None
    created_date: datetime | None = None
    url: str | None = None
    metadata: dict[str, Any] | None = Field(default_factory=dict)
    resolution: bool | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, (int, uuid.UUID)) else value

    @field_validator("resolution_date", "created_date", mode="after")
    @classmethod
    def _as_utc(cls, value: datetime | None) -> datetime | None:
        return _utc(value)

    @field_serializer("resolution_date", "created_date")
    def _dump_date(self, value: datetime | None) -> str | None:
        return format_datetime(value)


class Forecast(BaseModel):
    """A probability that the question resolves YES, with whatever the forecaster wants to keep."""

    prob: float = Field(strict=True)  # a JSON number: not true/false, not "0.5"
    # Any JSON value: the paper's ArbitrageForecaster files keep a list (the call tree) here.
    metadata: Any = None

    @field_validator("prob", mode="after")
    @classmethod
    def _in_unit_interval(cls, value: float) -> float:
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError(probability_problem(value))
        return value


def probability_problem(value: float) -> str:
    """Why ``value`` is not a probability, in one sentence (a value in (1, 100] is likely a percentage)."""
    text = f"probability must be within [0, 1], got {value:g}"
    if math.isfinite(value) and 1.0 < value <= 100.0:
        text += f" (if that is a percentage, give {value / 100:g})"
    return text


class ForecastEntry(BaseModel):
    """One field of a forecast line: the question and the forecast given for it."""

    model_config = ConfigDict(extra="allow")

    question: ForecastingQuestion
    forecast: Forecast


class ForecastLine(BaseModel):
    """One tuple's forecasts in the paper's layout: ``{"line": {field: entry}, "violation_data": ...}``."""

    model_config = ConfigDict(extra="allow")

    line: dict[str, ForecastEntry]
    violation_data: dict[str, Any] | None = None


class GroundTruthRecord(BaseModel):
    """A line of the paper's ``ground_truth_results.jsonl``: a resolved question and its forecast."""

    model_config = ConfigDict(extra="allow")

    question: ForecastingQuestion
    forecast: Forecast
    prob: float | None = None
    resolution: bool | None = None
    brier_score: float | None = None
    log_score: float | None = None


class CheckerConfig(BaseModel):
    """One check's settings in the paper's run configuration."""

    model_config = ConfigDict(extra="allow")

    name: str
    default_tolerance: float | None = None
    frequentist_hparams: dict[str, float] | None = None
    path: str | None = None


class RunConfig(BaseModel):
    """The paper's ``config.jsonl``: which forecaster ran on which tuple files."""

    model_config = ConfigDict(extra="allow")

    forecaster_class: str
    full_forecaster_config: dict[str, Any] | None = None
    checkers: list[CheckerConfig] = Field(default_factory=list)


def question_type_errors(check: Check, questions: Mapping[str, ForecastingQuestion]) -> list[tuple[str, str]]:
    """(field, message) for each question whose type does not fit its slot in ``check``."""
    errors = []
    for name, question in questions.items():
        expected = check.question_types.get(name)
        if expected is not None and question.question_type != expected:
            errors.append(
                (
                    name,
                    f"{check.name} expects a {expected} question in field {name}, got {question.question_type}",
                )
            )
    return errors


def _field_set_errors(check: Check, present: set[str]) -> list[str]:
    missing = [f for f in check.field_names if f not in present]
    extra = sorted(present - set(check.field_names) - {"metadata"})
    out = []
    if missing:
        out.append(f"missing field(s) {', '.join(missing)} for {check.name}")
    if extra:
        out.append(f"unexpected field(s) {', '.join(extra)} for {check.name} (fields: {', '.join(check.field_names)})")
    return out


@cache
def tuple_model(check: Check) -> type[BaseModel]:
    """The pydantic type of one tuple of ``check``: its fields as questions, plus ``metadata``."""
    fields: dict[str, Any] = {name: (ForecastingQuestion, ...) for name in check.field_names}
    fields["metadata"] = (dict[str, Any] | None, None)

    def _type_fits(cls: type, question: ForecastingQuestion, info: ValidationInfo) -> ForecastingQuestion:
        problems = question_type_errors(check, {info.field_name: question})
        if problems:
            raise ValueError(problems[0][1])
        return question

    model = create_model(
        f"{check.class_name.removesuffix('Checker')}Tuple",
        __config__=ConfigDict(extra="forbid"),
        __validators__={"_type_fits": field_validator(*check.field_names, mode="after")(_type_fits)},
        **fields,
    )
    model.check = check  # type: ignore[attr-defined]
    return model


def validate_forecast_line(check: Check, line: ForecastLine) -> list[tuple[str, str]]:
    """Problems that make a parsed forecast line unusable for ``check``: (field path, message)."""
    problems = [("line", msg) for msg in _field_set_errors(check, set(line.line))]
    problems += [
        (f"line.{name}.question.question_type", msg)
        for name, msg in question_type_errors(check, {n: e.question for n, e in line.line.items()})
    ]
    return problems
