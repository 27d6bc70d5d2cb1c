"""The data that flows between stages: questions, forecasts, tuples and forecast lines.

Field names and JSON shapes follow the consistency-checks paper's published files, so those
files load as they are: dates as ``2024-07-15 22:20:00`` or ``2028-01-01T00:00:00Z`` (naive
ones are taken as UTC), ``data_source`` free text, unknown keys kept.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    create_model,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from . import distributions as dist
from .checks import Check

QuestionType = Literal["binary", "conditional_binary", "multiple_choice", "numeric", "date"]
#: Question types whose forecast is one probability (a :class:`Forecast`).
BINARY_TYPES = frozenset({"binary", "conditional_binary"})
#: Question types whose forecast is a CDF on the range's grid (a :class:`NumericForecast`).
NUMERIC_TYPES = frozenset({"numeric", "date"})
#: How far a multiple-choice forecast's probabilities may sum from 1.
SUM_TOLERANCE = 1e-6
#: How far a CDF's first (last) point may be from 0 (1) at a closed lower (upper) bound.
BOUND_TOLERANCE = 1e-9

_LAX_BOOL = TypeAdapter(bool | None)
_Probability = Annotated[float, Field(strict=True)]


def _is_none(value: Any) -> bool:
    return value is None


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def format_datetime(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with a ``Z``, as the paper's tuple files write dates."""
    return None if value is None else _utc(value).isoformat().replace("+00:00", "Z")


class NumericRange(BaseModel):
    """The range of a numeric or date question: bounds, whether the outcome may fall outside each, the scale.

    ``scale="log"`` spaces the forecast grid geometrically; ``zero_point`` generalises it as Metaculus does (the grid
    is geometric in x - zero_point, which must lie outside the range; None is 0). A date question's bounds are POSIX
    seconds (UTC).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    lower: float = Field(allow_inf_nan=False)
    upper: float = Field(allow_inf_nan=False)
    open_lower: bool = False
    open_upper: bool = False
    scale: Literal["linear", "log"] = "linear"
    zero_point: float | None = Field(default=None, allow_inf_nan=False, exclude_if=_is_none)
    unit: str | None = Field(default=None, exclude_if=_is_none)

    @model_validator(mode="after")
    def _consistent(self) -> NumericRange:
        if not self.lower < self.upper:
            raise ValueError(
                f"bounds reversed: the lower bound {self.lower:g} is not below the upper bound {self.upper:g}"
            )
        if self.scale == "linear" and self.zero_point is not None:
            raise ValueError("zero_point belongs to a log scale; give scale='log' or drop zero_point")
        if self.scale == "log":
            z = self.zero_point
            if z is None and self.lower <= 0:
                raise ValueError(f"a log scale needs a positive lower bound, got {self.lower:g}")
            if z is not None and self.lower <= z <= self.upper:
                raise ValueError(f"zero_point {z:g} must lie outside the range [{self.lower:g}, {self.upper:g}]")
        return self

    @property
    def _zero(self) -> float | None:
        return None if self.scale == "linear" else (self.zero_point or 0.0)

    def location(self, x) -> np.ndarray:
        """Values → locations in [0, 1] on the scale (outside the range: below 0 or above 1)."""
        return dist.to_location(x, self.lower, self.upper, self._zero)

    def value(self, t) -> np.ndarray:
        """Locations → values (inverse of :meth:`location`)."""
        return dist.from_location(t, self.lower, self.upper, self._zero)

    def grid(self) -> np.ndarray:
        """The 201 values at which a forecast gives P(X <= x)."""
        return self.value(dist.locations())


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
    #: multiple_choice only: the ordered option labels.
    options: list[str] | None = Field(default=None, exclude_if=_is_none)
    #: numeric and date only.
    range: NumericRange | None = Field(default=None, exclude_if=_is_none)
    #: binary: true/false; multiple_choice: an option label; numeric/date: a number (a date as POSIX seconds or an
    #: ISO date) or "below_lower_bound"/"above_upper_bound". None: unresolved or annulled.
    resolution: bool | float | str | None = None

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

    @field_validator("range", mode="before")
    @classmethod
    def _date_bounds(cls, value: Any, info: ValidationInfo) -> Any:
        """A date question's bounds may be given as ISO dates; they are kept as POSIX seconds."""
        if info.data.get("question_type") == "date" and isinstance(value, dict):
            value = {k: _posix(v) if k in ("lower", "upper") and isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("resolution", mode="wrap")
    @classmethod
    def _resolution_type(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        """Binary resolutions parse as before (true/false, 1/0, "yes"/"no"); the other types by their own rules."""
        kind = info.data.get("question_type", "binary")
        if kind in BINARY_TYPES:
            return _LAX_BOOL.validate_python(value)
        if value is None:
            return None
        if kind == "multiple_choice":
            if not isinstance(value, str):
                raise ValueError(f"a multiple_choice resolution is one of the option labels, got {value!r}")
            return value
        if value in (dist.BELOW, dist.ABOVE):
            return value
        if kind == "date" and isinstance(value, str):
            return _posix(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"a {kind} resolution is a finite number or {dist.BELOW!r}/{dist.ABOVE!r}, got {value!r}")
        return float(value)

    @model_validator(mode="after")
    def _fields_fit_type(self) -> ForecastingQuestion:
        kind = self.question_type
        if self.options is not None and kind != "multiple_choice":
            raise _located(
                "options", f"options belong to multiple_choice questions, not to a {kind} question", self.options
            )
        if self.range is not None and kind not in NUMERIC_TYPES:
            raise _located(
                "range", f"a range belongs to numeric and date questions, not to a {kind} question", self.range
            )
        if kind == "multiple_choice" and self.options is None:
            raise _located("question_type", _missing("multiple_choice", "options (its ordered option labels)"), kind)
        if kind in NUMERIC_TYPES and self.range is None:
            raise _located("question_type", _missing(kind, "a range (lower and upper bounds)"), kind)
        if kind == "multiple_choice":
            try:
                _check_options(self.options)
            except ValueError as exc:
                raise _located("options", str(exc), self.options) from None
            if self.resolution is not None and self.resolution not in self.options:  # type: ignore[operator]
                listed = ", ".join(map(repr, self.options or []))
                raise _located(
                    "resolution",
                    f"resolution {self.resolution!r} is not one of the options ({listed})",
                    self.resolution,
                )
        return self

    # ------------------------------------------------------------------ outcomes of non-binary questions
    def outcome_location(self) -> float | None:
        """A numeric/date resolution as a location on the range's scale (below 0 / above 1 outside it); None if
        unresolved. ``below_lower_bound`` is -inf and ``above_upper_bound`` +inf."""
        if self.range is None or self.resolution is None:
            return None
        if self.resolution == dist.BELOW:
            return -math.inf
        if self.resolution == dist.ABOVE:
            return math.inf
        return float(self.range.location(float(self.resolution)))  # type: ignore[arg-type]

    def outcome_index(self) -> int | None:
        """The resolution as an outcome index: an option's position, or a numeric outcome's bin (0 below the range,
        1-200 the grid's cells, 201 above; on a closed side an outcome beyond the bound is counted at the bound,
        the only place a forecast for it may put mass); None if unresolved or binary."""
        if self.resolution is None:
            return None
        if self.question_type == "multiple_choice":
            return (self.options or []).index(self.resolution)  # type: ignore[arg-type]
        t = self.outcome_location()
        if t is None:
            return None
        assert self.range is not None
        if t < 0 and not self.range.open_lower:
            t = 0.0
        if t > 1 and not self.range.open_upper:
            t = 1.0
        return dist.outcome_bin(t)


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


class ChoiceForecast(BaseModel):
    """A probability for each option of a multiple-choice question, in the question's option order.

    The probabilities must sum to 1 within :data:`SUM_TOLERANCE`; :meth:`normalised` is the explicit way to
    rescale a forecaster's raw numbers (never done silently).
    """

    probs: list[_Probability] = Field(min_length=2)
    metadata: Any = None

    @field_validator("probs", mode="after")
    @classmethod
    def _distribution(cls, value: list[float]) -> list[float]:
        for i, p in enumerate(value):
            if not math.isfinite(p) or not 0.0 <= p <= 1.0:
                raise ValueError(f"option {i}: {probability_problem(p)}")
        total = math.fsum(value)
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise ValueError(f"the option probabilities must sum to 1, they sum to {total:.6g}")
        return value

    @classmethod
    def normalised(
        cls, question: ForecastingQuestion, values: Mapping[str, float] | Sequence[float], metadata: Any = None
    ) -> ChoiceForecast:
        """Rescale non-negative weights (a list in option order, or label → weight, missing labels 0) to sum 1."""
        options = question.options or []
        if isinstance(values, Mapping):
            unknown = [k for k in values if k not in options]
            if unknown:
                raise ValueError(f"{', '.join(map(repr, unknown))} is not an option ({', '.join(map(repr, options))})")
            weights = [float(values.get(o, 0.0)) for o in options]
        else:
            weights = [float(v) for v in values]
            if len(weights) != len(options):
                raise ValueError(f"{len(weights)} weights for {len(options)} options")
        if any(not math.isfinite(w) or w < 0 for w in weights):
            raise ValueError(f"weights must be finite and non-negative, got {weights}")
        total = math.fsum(weights)
        if total <= 0:
            raise ValueError("the weights sum to 0: no distribution to normalise")
        return cls(probs=[w / total for w in weights], metadata=metadata)

    def fits(self, question: ForecastingQuestion) -> None:
        """Raise ValueError unless this forecast is one for ``question``."""
        n = len(question.options or [])
        if len(self.probs) != n:
            raise ValueError(f"{len(self.probs)} probabilities for {n} options")


class NumericForecast(BaseModel):
    """A CDF on the question's 201-point grid: ``cdf[j]`` = P(X <= x_j) (see :mod:`consistency.distributions`).

    ``cdf[0]`` is the mass below the lower bound (0 for a closed bound), ``1 - cdf[200]`` the mass above the upper
    bound (0 for a closed bound). :meth:`from_percentiles` builds one from a few quantiles.
    """

    cdf: list[_Probability] = Field(min_length=dist.GRID_POINTS, max_length=dist.GRID_POINTS)
    metadata: Any = None

    @field_validator("cdf", mode="after")
    @classmethod
    def _cumulative(cls, value: list[float]) -> list[float]:
        for j, p in enumerate(value):
            if not math.isfinite(p) or not 0.0 <= p <= 1.0:
                raise ValueError(f"point {j}: {probability_problem(p)}")
        for j in range(1, len(value)):
            if value[j] < value[j - 1]:
                raise ValueError(
                    f"a CDF never decreases, but point {j} ({value[j]:g}) is below point {j - 1} ({value[j - 1]:g})"
                )
        return value

    @classmethod
    def from_percentiles(
        cls, question: ForecastingQuestion, percentiles: Mapping[float, float], metadata: Any = None
    ) -> NumericForecast:
        """The CDF through quantiles such as ``{0.1: 20, 0.5: 35, 0.9: 60}`` (values in the question's unit; a date
        question's as POSIX seconds or ISO dates), linear in the scale's location between them, the tails carried
        to open bounds (:func:`consistency.distributions.cdf_from_percentiles`)."""
        r = _numeric_range(question)
        values = {
            p: _posix(x) if question.question_type == "date" and isinstance(x, str) else x
            for p, x in percentiles.items()
        }
        cdf = dist.cdf_from_percentiles(values, r.lower, r.upper, r._zero, r.open_lower, r.open_upper)
        return cls(cdf=cdf.tolist(), metadata=metadata)

    def fits(self, question: ForecastingQuestion) -> None:
        """Raise ValueError unless this CDF respects ``question``'s closed bounds."""
        r = _numeric_range(question)
        if not r.open_lower and self.cdf[0] > BOUND_TOLERANCE:
            raise ValueError(f"the lower bound is closed, so the CDF must start at 0, got {self.cdf[0]:g}")
        if not r.open_upper and self.cdf[-1] < 1.0 - BOUND_TOLERANCE:
            raise ValueError(f"the upper bound is closed, so the CDF must end at 1, got {self.cdf[-1]:g}")

    def pmf(self) -> np.ndarray:
        """The 202 bin masses: below the range, the 200 cells, above the range."""
        return dist.pmf(self.cdf)

    def cdf_at(self, question: ForecastingQuestion, value: float) -> float:
        """P(X <= value), linear in the location inside each cell (values outside the range: at the bound)."""
        return float(dist.cdf_at(self.cdf, _numeric_range(question).location(value)))


AnyForecast = Forecast | ChoiceForecast | NumericForecast
_FORECAST_KEYS = {"prob": Forecast, "probs": ChoiceForecast, "cdf": NumericForecast}


def forecast_class(question_type: str) -> type[Forecast] | type[ChoiceForecast] | type[NumericForecast]:
    """The forecast a question of this type takes."""
    if question_type == "multiple_choice":
        return ChoiceForecast
    if question_type in NUMERIC_TYPES:
        return NumericForecast
    return Forecast


def _read_forecast(data: Any, question: ForecastingQuestion | None) -> AnyForecast:
    """The forecast in ``data`` (a model or a dict), of the kind its keys say; checked against ``question``."""
    if isinstance(data, (Forecast, ChoiceForecast, NumericForecast)):
        forecast = data
    else:
        keys = [k for k in _FORECAST_KEYS if isinstance(data, dict) and k in data]
        if len(keys) > 1:
            raise ValueError(f"a forecast has one of prob, probs and cdf, got {' and '.join(keys)}")
        cls = _FORECAST_KEYS[keys[0]] if keys else forecast_class(question.question_type if question else "binary")
        forecast = cls.model_validate(data)
    if question is not None:
        wanted = forecast_class(question.question_type)
        if not isinstance(forecast, wanted):
            key = next(k for k, c in _FORECAST_KEYS.items() if c is wanted)
            raise ValueError(
                f"a {question.question_type} question takes a forecast with {key!r}, got {type(forecast).__name__}"
            )
        if not isinstance(forecast, Forecast):
            forecast.fits(question)
    return forecast


def parse_forecast(question: ForecastingQuestion, data: Any) -> AnyForecast:
    """Read any forecast for ``question``: ``{"prob": p}``, ``{"probs": [...]}`` or ``{"cdf": [...]}`` as its type
    requires; a ValueError (a pydantic ValidationError for malformed values) says what is wrong."""
    return _read_forecast(data, question)


class ForecastEntry(BaseModel):
    """One field of a forecast line: the question and the forecast given for it (of the question's kind)."""

    model_config = ConfigDict(extra="allow")

    question: ForecastingQuestion
    forecast: AnyForecast

    @field_validator("forecast", mode="wrap")
    @classmethod
    def _kind(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> AnyForecast:
        return _read_forecast(value, info.data.get("question"))


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


def _posix(value: str) -> float:
    """An ISO date or date-time (naive: UTC) as POSIX seconds."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO date") from None
    return _utc(parsed).timestamp()  # type: ignore[union-attr]


def _located(field: str, message: str, value: Any) -> ValidationError:
    """A validation error at ``field`` (a model-level check raised where the user must look)."""
    error = {
        "type": PydanticCustomError("value_error", "Value error, {reason}", {"reason": message}),
        "loc": (field,),
        "input": value,
    }
    return ValidationError.from_exception_data("ForecastingQuestion", [error])  # type: ignore[list-item]


def _missing(kind: str, what: str) -> str:
    types = ", ".join(t for t in QuestionType.__args__)  # type: ignore[attr-defined]
    return f"a {kind} question needs {what}; a question without one is binary or conditional_binary (types: {types})"


def _check_options(options: list[str]) -> None:
    if len(options) < 2:
        raise ValueError(f"a multiple_choice question needs at least two options, got {len(options)}")
    if any(not o.strip() for o in options):
        raise ValueError("an option label is empty")
    seen: set[str] = set()
    for o in options:
        if o in seen:
            raise ValueError(f"option {o!r} appears twice; options must be unique")
        seen.add(o)


def _numeric_range(question: ForecastingQuestion) -> NumericRange:
    if question.range is None:
        raise ValueError(f"a {question.question_type} question has no range, so it takes no CDF")
    return question.range


def question_type_errors(check: Check, questions: Mapping[str, ForecastingQuestion]) -> list[tuple[str, str]]:
    """(field, message) for each question whose type does not fit its slot in ``check``."""
    errors = []
    for name, question in questions.items():
        expected = check.question_types.get(name)
        fits = question.question_type == expected or (expected == "numeric" and question.question_type == "date")
        if expected is not None and not fits:
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
