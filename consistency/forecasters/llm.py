"""Forecasters that ask a language model, through the project's LLM layer."""

from __future__ import annotations

import difflib
import inspect
from functools import cache
from typing import Any

from pydantic import BaseModel, Field

from ..llm import LLM, LLMResult
from ..llm.specs import parse_model_spec
from ..models import NUMERIC_TYPES, AnyForecast, Forecast, ForecastingQuestion
from ..prompts import question_block, render
from .answers import (
    answer_forecast,
    choice_answer,
    option_lines,
    percentile_answer,
    percentile_names,
    range_lines,
    value_format,
)
from .base import Forecaster, ForecastError, note_call
from .loading import ForecasterSpecError

#: Request fields the framework sets itself (the model, the messages, the structured-output machinery).
_FRAMEWORK_FIELDS = frozenset(
    {"self", "model", "messages", "stream", "stream_options", "tools", "tool_choice", "functions", "function_call"}
    | {"response_format", "n"}
)

#: The request parameters an error message lists first.
_COMMON = ("temperature", "max_tokens", "top_p", "seed", "stop", "reasoning_effort", "extra_body")


@cache
def request_parameters() -> tuple[str, ...]:
    """What ``chat.completions.create`` of the installed ``openai`` client takes, less what we set ourselves."""
    from ..llm.chat import parameters

    return tuple(sorted(parameters() - _FRAMEWORK_FIELDS))


def check_request_parameters(owner: type, params: dict[str, Any], options: tuple[str, ...]) -> None:
    """Refuse, before any call, a request parameter the client would reject on every call."""
    accepted = request_parameters()
    for name in params:
        if name not in accepted:
            hint = ""
            if "key" in name.lower() or "token" in name.lower():
                hint = " (keys come from the environment or .env: OPENAI_API_KEY, OPENROUTER_API_KEY, CC_API_KEY)"
            close = difflib.get_close_matches(name, [*options, *accepted], n=1)
            hint = hint or (f" (did you mean {close[0]!r}?)" if close else "")
            shown = ", ".join(p for p in _COMMON if p in accepted)
            raise ForecasterSpecError(
                f"{owner.__name__} has no option {name!r}{hint}; its options: {', '.join(options)}, and the "
                f"request parameters of openai's chat.completions.create ({shown}, ...)"
            )


class ForecastAnswer(BaseModel):
    """What the model must return: a justification, then a probability."""

    reasoning: str = Field(description="A short justification.")
    prob: float = Field(ge=0.0, le=1.0, description="Probability that the question resolves YES.")


class ProbabilityAnswer(BaseModel):
    """A probability alone: what a model too small to reason usefully answers (fewer tokens, same meaning)."""

    prob: float = Field(ge=0.0, le=1.0, description="Probability that the question resolves YES.")


class ExtractedForecast(BaseModel):
    """The conclusion of a free-text reasoning, read back by a (possibly smaller) model."""

    reasoning_summary: str = Field(description="One or two sentences summarising the reasoning.")
    prob: float = Field(ge=0.0, le=1.0, description="The probability of YES the reasoning concluded with.")


def forecast_messages(
    question: ForecastingQuestion, system: str = "forecast_system", user: str = "forecast_user", **values: str
) -> list[dict[str, str]]:
    """The system and user messages of a prompt pair; a multiple-choice or numeric question's user prompt also gets
    its options or range (``$options``/``$count`` or ``$range``/``$levels``/``$format``)."""
    user_text = render(user, **{"question": question_block(question), **question_parts(question), **values})
    return [{"role": "system", "content": render(system)}, {"role": "user", "content": user_text}]


def question_parts(question: ForecastingQuestion) -> dict[str, str]:
    """What a multiple-choice or numeric prompt states beyond the question block."""
    if question.question_type == "multiple_choice":
        return {"options": option_lines(question), "count": str(len(question.options or []))}
    if question.question_type in NUMERIC_TYPES:
        return {"range": range_lines(question), "levels": percentile_names(), "format": value_format(question)}
    return {}


def prompt_kind(question: ForecastingQuestion) -> str:
    """The infix of a question type's prompt files: ``choice``, ``numeric`` (dates too), or none for yes/no."""
    if question.question_type == "multiple_choice":
        return "choice"
    return "numeric" if question.question_type in NUMERIC_TYPES else ""


def answer_model(question: ForecastingQuestion, lead: str | None, name: str) -> type[BaseModel]:
    """The structured answer a multiple-choice or numeric question is asked for (``name``: the schema's title)."""
    if question.question_type == "multiple_choice":
        return choice_answer(len(question.options or []), lead, f"Choice{name}")
    return percentile_answer(question, lead, f"Percentile{name}")


def basic_request(
    question: ForecastingQuestion, reasoning: bool = True
) -> tuple[list[dict[str, str]], type[BaseModel]]:
    """The basic forecaster's messages and answer schema for ``question`` (the inspect solver sends the same).

    A multiple-choice question is asked for a probability per option, a numeric or date one for percentiles
    (:mod:`.answers`); without ``reasoning`` the same system prompt, a shorter request and no justification."""
    kind = prompt_kind(question)
    if kind:
        lead = "reasoning" if reasoning else None
        user = f"forecast_{kind}_user" if reasoning else f"forecast_{kind}_brief_user"
        return forecast_messages(question, f"forecast_{kind}_system", user), answer_model(question, lead, "Answer")
    if not reasoning:
        return forecast_messages(question, "forecast_brief_system", "forecast_brief_user"), ProbabilityAnswer
    return forecast_messages(question), ForecastAnswer


def basic_forecast(question: ForecastingQuestion, answer: BaseModel) -> AnyForecast:
    """The forecast a :func:`basic_request` answer stands for (its justification, if any, in the metadata)."""
    if isinstance(answer, ProbabilityAnswer):
        return Forecast(prob=answer.prob)
    if isinstance(answer, ForecastAnswer):
        return Forecast(prob=answer.prob, metadata={"reasoning": answer.reasoning})
    return answer_forecast(question, answer, "reasoning" if "reasoning" in type(answer).model_fields else None)


class LLMForecaster(Forecaster):
    """Base for forecasters that call models; ``self.llm`` is the run's shared client."""

    llm: LLM | None = None

    def __init__(self, model: str = "local", **params: Any) -> None:
        parse_model_spec(model)  # fail at construction on a malformed spec, not mid-run
        named = tuple(n for n in inspect.signature(type(self).__init__).parameters if n not in ("self", "params"))
        check_request_parameters(type(self), params, named)
        self.model = model
        self.params = params

    @property
    def label(self) -> str:
        return f"{self.name}_{parse_model_spec(self.model).label}"

    def _client(self) -> LLM:
        if self.llm is None:
            raise RuntimeError("no LLM session: use forecast_sync, forecast_many or `async with forecaster.session()`")
        return self.llm

    @staticmethod
    def _value(result: LLMResult) -> Any:
        note_call(result)
        if not result.ok:
            raise ForecastError(result.error or "the model gave no usable answer", result.raw)
        return result.value


class BasicForecaster(LLMForecaster):
    """One structured call: a short justification and a probability (paper appendix F.1's idea).

    ``reasoning`` asks for the justification; by default it is asked of every model except the bundled
    ``local`` one, whose 135M-parameter justifications carry no information but cost most of its tokens:
    it gets a shorter prompt and answers with the probability alone (``-F reasoning=true`` restores both).
    """

    name = "basic"

    def __init__(self, model: str = "local", reasoning: bool | None = None, **params: Any) -> None:
        super().__init__(model, **params)
        self.reasoning = parse_model_spec(model).provider != "local" if reasoning is None else bool(reasoning)

    def request(self, question: ForecastingQuestion) -> tuple[list[dict[str, str]], type[BaseModel]]:
        """The messages and answer schema this forecaster sends for ``question`` (``cc ask`` sends the same)."""
        return basic_request(question, self.reasoning)

    async def forecast(self, question: ForecastingQuestion) -> AnyForecast:
        messages, schema = self.request(question)
        return basic_forecast(
            question, self._value(await self._client().structured(self.model, messages, schema, **self.params))
        )


class CoTForecaster(LLMForecaster):
    """Free-text reasoning from the main model, then ``extractor`` reads off the probability (appendix F.2)."""

    name = "cot"

    def __init__(self, model: str = "local", extractor: str | None = None, **params: Any) -> None:
        super().__init__(model, **params)
        self.extractor = extractor or model
        parse_model_spec(self.extractor)

    async def forecast(self, question: ForecastingQuestion) -> AnyForecast:
        llm = self._client()
        kind = prompt_kind(question)
        infix = f"_{kind}" if kind else ""
        messages = forecast_messages(question, f"cot{infix}_system", f"cot{infix}_user")
        reasoning = self._value(await llm.text(self.model, messages, **self.params))
        extract = forecast_messages(
            question, f"extract{infix}_system", f"extract{infix}_user", reasoning=reasoning.strip()
        )
        schema = answer_model(question, "reasoning_summary", "Extract") if kind else ExtractedForecast
        answer = self._value(await llm.structured(self.extractor, extract, schema))
        if kind:
            forecast = answer_forecast(question, answer, "reasoning_summary")
            forecast.metadata = {"reasoning": reasoning, **forecast.metadata}
            return forecast
        return Forecast(
            prob=answer.prob, metadata={"reasoning": reasoning, "reasoning_summary": answer.reasoning_summary}
        )
