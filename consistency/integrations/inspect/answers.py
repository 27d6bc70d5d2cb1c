"""Reading a probability (or a multiple-choice or numeric distribution) out of a model's answer.

The solver asks for our structured answer (``{"reasoning": ..., "prob": ...}``), but through inspect
a provider may ignore the schema: JSON inside a code fence or prose, a percentage, or a sentence
ending "Probability: 0.42" are all read. Anything else is a failure with a reason, never a guess.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from ...errors import InputError
from ...models import AnyForecast, Forecast, ForecastingQuestion

_PROB_KEYS = ("prob", "probability", "p", "forecast", "likelihood", "chance")
_REASON_KEYS = ("reasoning", "reason", "rationale", "explanation", "justification")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_NUMBER = r"([-+]?\d+(?:\.\d+)?|[-+]?\.\d+)\s*(%?)"
_LABELLED = re.compile(r"(?:probability|prob|forecast|likelihood|chance)[^0-9.+\-]{0,20}" + _NUMBER, re.I)
_PERCENT = re.compile(r"([-+]?\d+(?:\.\d+)?)\s*%")
_BARE = re.compile(r"^\s*" + _NUMBER + r"\s*$")


class Answer(BaseModel):
    """One question's answer as the scorer and the log keep it: the probability (a yes/no question) or the
    distribution (``forecast``: ``{"probs": ...}`` of a multiple-choice question, ``{"cdf": ...}`` of a numeric
    or date one), or why there is none."""

    prob: float | None = None
    forecast: dict[str, Any] | None = None
    reasoning: str | None = None
    raw: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and (self.prob is not None or self.forecast is not None)

    def forecast_data(self) -> dict[str, Any]:
        """The forecast as a forecast line holds it (without metadata)."""
        return {"prob": self.prob} if self.forecast is None else dict(self.forecast)

    @classmethod
    def of(cls, forecast: AnyForecast, raw: str = "") -> Answer:
        """The answer a forecast of any kind stands for."""
        meta = forecast.metadata
        reasoning = meta.get("reasoning") if isinstance(meta, dict) else None
        reasoning = reasoning if isinstance(reasoning, str) else None
        if isinstance(forecast, Forecast):
            return cls(prob=forecast.prob, reasoning=reasoning, raw=raw)
        data = forecast.model_dump(mode="json", exclude={"metadata"})
        return cls(forecast=data, reasoning=reasoning, raw=raw)


class AnswerError(InputError):
    """No probability could be read from an answer (the message says why)."""


def parse_answer(text: str) -> Answer:
    """The probability and reasoning in ``text``; an :class:`Answer` with ``error`` set when there is none."""
    try:
        prob, reasoning = _read(text)
    except AnswerError as exc:
        return Answer(raw=text, error=str(exc))
    return Answer(prob=prob, reasoning=reasoning, raw=text)


def parse_distribution(text: str, question: ForecastingQuestion, schema: type[BaseModel]) -> Answer:
    """A multiple-choice or numeric answer: the first JSON object in ``text`` (whole, fenced or embedded) that
    fits ``schema`` (:func:`~consistency.forecasters.llm.basic_request`'s), as a forecast; else why not."""
    from ...forecasters.llm import basic_forecast

    error = f"no JSON object in the answer: {_clip(text)}" if text.strip() else "the model gave an empty answer"
    for candidate in _json_candidates(text):
        try:
            answer = schema.model_validate(candidate)
        except ValidationError as exc:
            error = f"the answer does not fit {schema.__name__}: {exc.errors()[0]['msg']}"
            continue
        return Answer.of(basic_forecast(question, answer), raw=text)
    return Answer(raw=text, error=error)


def _read(text: str) -> tuple[float, str | None]:
    if not text or not text.strip():
        raise AnswerError("the model gave an empty answer")
    for candidate in _json_candidates(text):
        found = _from_object(candidate)
        if found is not None:
            return found
    labelled = _LABELLED.findall(text)
    if labelled:  # the last one is the conclusion
        return _number(*labelled[-1]), None
    bare = _BARE.match(text)
    if bare:
        return _number(*bare.groups()), None
    percents = _PERCENT.findall(text)
    if len(percents) == 1:
        return _number(percents[0], "%"), None
    raise AnswerError(f"no probability in the answer: {_clip(text)}")


def _json_candidates(text: str) -> list[Any]:
    pieces = [text.strip(), *_FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        pieces.append(text[start : end + 1])
    out = []
    for piece in pieces:
        try:
            out.append(json.loads(piece))
        except (json.JSONDecodeError, RecursionError):
            continue
    return out


def _from_object(obj: Any) -> tuple[float, str | None] | None:
    if not isinstance(obj, dict):
        return None
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in _PROB_KEYS:
        if key in lowered:
            value = lowered[key]
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise AnswerError(f"the answer's {key!r} is not a number: {_clip(json.dumps(value))}")
            text = str(value).strip()
            match = _BARE.match(text)
            if not match:
                raise AnswerError(f"the answer's {key!r} is not a number: {_clip(text)}")
            reasoning = next((str(lowered[k]) for k in _REASON_KEYS if lowered.get(k) is not None), None)
            return _number(*match.groups()), reasoning
    return None


def _number(digits: str, percent: str = "") -> float:
    value = float(digits)
    if percent:
        value /= 100
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise AnswerError(f"probability {digits}{percent} is outside [0, 1]")
    return value


def _clip(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")
