"""What the LLM forecasters ask for on multiple-choice and numeric questions, and how an answer becomes a forecast.

A multiple-choice answer is one probability per option, in the order the prompt lists them; a numeric (or date)
answer is a few percentiles (:data:`PERCENTILES`), turned into a CDF on the question's grid by
:meth:`~consistency.models.NumericForecast.from_percentiles`. Both are pydantic models the structured-output layer
validates, so an invalid answer is asked again with the reason (``LLMSettings.max_reasks`` times) instead of being
repaired: probabilities that do not sum to 1, a percentile outside a closed bound, percentiles out of order. A
numeric answer model is made per range (the bounds are part of its schema and of its validation).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from functools import cache
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, Field, create_model, model_validator

from ..models import NUMERIC_TYPES, SUM_TOLERANCE, ChoiceForecast, ForecastingQuestion, NumericForecast, NumericRange

#: The percentiles a numeric answer gives (in percent): enough to draw the body and both tails of a distribution.
PERCENTILES: tuple[int, ...] = (5, 10, 25, 50, 75, 90, 95)
#: How far from 1 a model's stated option probabilities may sum and still be taken (rescaled to sum 1, the
#: stated sum kept in the forecast's metadata): what writing each to two decimals explains. Further off: asked again.
SUM_SLACK = 0.02
#: The text fields an answer may lead with: a justification, or (read off a reasoning) its summary.
LEADS = {
    "reasoning": "A short justification.",
    "reasoning_summary": "One or two sentences summarising the reasoning.",
}


# ------------------------------------------------------------------------------------------ prompt parts
def exact(x: float) -> str:
    """A number as text that reads back to the same float (integers without a decimal point)."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(x)


def date_text(seconds: float) -> str:
    """POSIX seconds as an ISO date (a date-time when not at midnight UTC)."""
    moment = datetime.fromtimestamp(seconds, UTC)
    if moment.hour == moment.minute == moment.second == moment.microsecond == 0:
        return moment.date().isoformat()
    return moment.isoformat().replace("+00:00", "Z")


def value_text(question: ForecastingQuestion, x: float) -> str:
    return date_text(x) if question.question_type == "date" else exact(x)


def option_lines(question: ForecastingQuestion, letters: bool = False) -> str:
    """``Options:`` then one line per option, numbered (``1. Red``) or lettered (``A. Red``)."""
    marks = letter_marks(len(question.options or [])) if letters else None
    lines = [f"{marks[i] if marks else i + 1}. {o}" for i, o in enumerate(question.options or [])]
    return "Options:\n" + "\n".join(lines)


def letter_marks(k: int) -> list[str]:
    """The letters A, B, C... of k options (at most 26)."""
    if k > 26:
        raise ValueError(f"options are lettered A to Z: at most 26, got {k}")
    return [chr(ord("A") + i) for i in range(k)]


def range_lines(question: ForecastingQuestion) -> str:
    """The range as the numeric prompts state it: unit, each bound (closed or open), scale."""
    r = question.range
    assert r is not None
    date = question.question_type == "date"
    lower, upper = value_text(question, r.lower), value_text(question, r.upper)
    lines = [] if date or not r.unit else [f"Unit: {r.unit}"]
    earlier, later = ("earlier", "later") if date else ("lower", "higher")
    lines.append(
        f"Lower bound: {lower} "
        + (f"(open: the outcome may be {earlier})" if r.open_lower else f"(closed: the outcome cannot be {earlier})")
    )
    lines.append(
        f"Upper bound: {upper} "
        + (f"(open: the outcome may be {later})" if r.open_upper else f"(closed: the outcome cannot be {later})")
    )
    if r.scale == "log":
        around = f" around {exact(r.zero_point)}" if r.zero_point else ""
        lines.append(f"Scale: logarithmic{around} (think in ratios rather than differences)")
    else:
        lines.append("Scale: linear")
    return "\n".join(lines)


def percentile_names(levels: tuple[int, ...] = PERCENTILES) -> str:
    """``5th, 10th, ... and 95th``."""
    words = [f"{p}{'st' if p % 10 == 1 and p != 11 else 'nd' if p % 10 == 2 and p != 12 else 'th'}" for p in levels]
    return ", ".join(words[:-1]) + " and " + words[-1]


def value_format(question: ForecastingQuestion) -> str:
    if question.question_type == "date":
        return "dates as YYYY-MM-DD"
    unit = question.range.unit if question.range else None
    return f"plain numbers in {unit}" if unit else "plain numbers"


# ------------------------------------------------------------------------------------------ answer models
class _ChoiceAnswer(BaseModel):
    """One probability per option, in the order listed."""

    @property
    def stated(self) -> list[float]:
        """The probabilities (a field of the subclass, after its text field)."""
        return list(self.__dict__["probabilities"])

    @model_validator(mode="after")
    def _sums_to_one(self) -> _ChoiceAnswer:
        total = math.fsum(self.stated)
        if abs(total - 1.0) > SUM_SLACK:
            raise ValueError(
                f"the {len(self.stated)} probabilities sum to {total:.4g}; they must sum to 1 "
                "(one probability per option, in the order listed)"
            )
        return self


@cache
def choice_answer(k: int, lead: str | None = "reasoning", name: str = "ChoiceAnswer") -> type[_ChoiceAnswer]:
    """The answer model for a question with ``k`` options, led by the text field ``lead`` (or none)."""
    fields: dict[str, Any] = {}
    if lead is not None:
        fields[lead] = (str, Field(description=LEADS[lead]))
    probability = Annotated[float, Field(ge=0.0, le=1.0)]
    fields["probabilities"] = (
        list[probability],  # type: ignore[valid-type]
        Field(
            min_length=k,
            max_length=k,
            description=f"The probability of each of the {k} options, in the order listed; they sum to 1.",
        ),
    )
    return create_model(name, __base__=_ChoiceAnswer, __doc__=_ChoiceAnswer.__doc__, **fields)


class _PercentileAnswer(BaseModel):
    """Percentiles of the outcome: ``pN`` is the value the outcome has an N% chance of being at or below."""

    question: ClassVar[ForecastingQuestion]  # the range and type the answer is validated against

    def quantiles(self) -> dict[float, Any]:
        """{0.05: value, ...} as :meth:`~consistency.models.NumericForecast.from_percentiles` takes them."""
        return {int(name[1:]) / 100: value for name, value in self.__dict__.items() if _is_level(name)}

    @model_validator(mode="after")
    def _a_distribution(self) -> _PercentileAnswer:
        NumericForecast.from_percentiles(type(self).question, self.quantiles())  # out of order, out of bounds...
        return self


def _is_level(name: str) -> bool:
    return len(name) > 1 and name[0] == "p" and name[1:].isdigit()


def percentile_answer(
    question: ForecastingQuestion, lead: str | None = "reasoning", name: str = "PercentileAnswer"
) -> type[_PercentileAnswer]:
    """The answer model for a numeric or date question: its :data:`PERCENTILES`, checked against its range."""
    if question.question_type not in NUMERIC_TYPES or question.range is None:
        raise ValueError(f"a {question.question_type} question takes no percentiles")
    return _percentile_answer(question.question_type, question.range, lead, name)


@cache
def _percentile_answer(kind: str, r: NumericRange, lead: str | None, name: str) -> type[_PercentileAnswer]:
    fields: dict[str, Any] = {}
    if lead is not None:
        fields[lead] = (str, Field(description=LEADS[lead]))
    date = kind == "date"
    shape = ForecastingQuestion(title="(range)", question_type=kind, range=r)  # type: ignore[arg-type]
    unit = "" if date or not r.unit else f" (in {r.unit})"
    for p in PERCENTILES:
        what = "date" if date else "value"
        text = f"The {what}{unit} the outcome has a {p}% chance of being at or below."
        if date:
            fields[f"p{p}"] = (str, Field(description=text + " An ISO date, YYYY-MM-DD."))
            continue
        bounds = {}
        if not r.open_lower:
            bounds["ge"] = r.lower
        if not r.open_upper:
            bounds["le"] = r.upper
        fields[f"p{p}"] = (float, Field(description=text, allow_inf_nan=False, **bounds))
    model = create_model(name, __base__=_PercentileAnswer, __doc__=_PercentileAnswer.__doc__, **fields)
    model.question = shape
    return model


# ------------------------------------------------------------------------------------------ answers → forecasts
def choice_forecast(
    question: ForecastingQuestion, probabilities: list[float], metadata: dict[str, Any]
) -> ChoiceForecast:
    """The forecast of a multiple-choice answer: as stated when it sums to 1, else rescaled (explicitly, via
    :meth:`~consistency.models.ChoiceForecast.normalised`) with the stated sum kept as ``metadata.stated_sum``."""
    total = math.fsum(probabilities)
    if abs(total - 1.0) <= SUM_TOLERANCE:
        return ChoiceForecast(probs=list(probabilities), metadata=metadata)
    return ChoiceForecast.normalised(question, probabilities, metadata={**metadata, "stated_sum": total})


def numeric_forecast(
    question: ForecastingQuestion, answer: _PercentileAnswer, metadata: dict[str, Any]
) -> NumericForecast:
    """The CDF through an answer's percentiles; the percentiles themselves go in ``metadata.percentiles``."""
    stated = {name[1:]: value for name, value in answer.__dict__.items() if _is_level(name)}
    return NumericForecast.from_percentiles(question, answer.quantiles(), metadata={**metadata, "percentiles": stated})


def answer_forecast(
    question: ForecastingQuestion, answer: BaseModel, lead: str | None
) -> ChoiceForecast | NumericForecast:
    """The forecast an answer model's value stands for (``lead``'s text kept in the metadata)."""
    metadata = {lead: getattr(answer, lead)} if lead is not None else {}
    if isinstance(answer, _ChoiceAnswer):
        return choice_forecast(question, answer.stated, metadata)
    assert isinstance(answer, _PercentileAnswer)
    return numeric_forecast(question, answer, metadata)
