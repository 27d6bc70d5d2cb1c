"""Solvers: ask each question of a tuple, with our prompt (``forecast_tuple``) or with any of our
forecasters running on inspect's model (``forecaster_tuple``).

A question shared by several tuples (P of a negation and of a paraphrase tuple...) is asked once
per task run and epoch: the answers are memoised per solver, by the question as the model sees it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    ResponseSchema,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import collect, json_schema
from pydantic import BaseModel, ValidationError

from ...errors import RunFailed
from ...forecasters.base import ForecastError, WrongKind, as_forecast
from ...forecasters.llm import ForecastAnswer, basic_request
from ...forecasters.loading import load_forecaster
from ...llm import LLMResult, LLMSettings
from ...llm.errors import describe, transient
from ...llm.retry import backoff
from ...models import ForecastingQuestion
from .answers import Answer, parse_answer, parse_distribution
from .compat import eval_max_retries, registered_name
from .dataset import ANSWERS_KEY, questions_of

log = logging.getLogger(__name__)

#: Request parameters of our forecasters that inspect's GenerateConfig takes under the same name.
_CONFIG_PARAMS = ("temperature", "max_tokens", "top_p", "seed", "frequency_penalty", "presence_penalty")


class _Memo:
    """One answer per key per event loop; concurrent askers of the same key share one call."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._answers: dict[str, asyncio.Future[Answer]] = {}

    async def get(self, key: str, make: Callable[[], Awaitable[Answer]]) -> Answer:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._answers = loop, {}
        future = self._answers.get(key)
        if future is None:
            future = self._answers[key] = asyncio.ensure_future(make())
            future.add_done_callback(lambda f: (f.cancelled() or f.exception() is not None) and self._forget(key, f))
        return await asyncio.shield(future)  # one sample's cancellation must not cancel the others' call

    def _forget(self, key: str, future: asyncio.Future[Answer]) -> None:
        if self._answers.get(key) is future:  # an error (or a cancelled call) is not an answer: ask again
            del self._answers[key]


def _chat(messages: list[dict[str, Any]]) -> list[ChatMessage]:
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


def _schema(model: type[BaseModel]) -> ResponseSchema:
    return ResponseSchema(name=model.__name__.lower(), json_schema=json_schema(model))


class Unanswered(RunFailed):
    """A call whose every attempt failed on a transient error: its sample fails, the run goes on."""


async def generate(model: Model, messages: list[ChatMessage], config: GenerateConfig) -> ModelOutput:
    """``model.generate``, with the transient failures inspect does not retry retried as ``cc`` retries them.

    inspect retries what its provider classifies (429, 5xx, dropped connections) and lets anything else
    end the whole evaluation, which a body that is not JSON (the openai SDK's ``JSONDecodeError``) did.
    Here every error our client counts as transient (:func:`...llm.errors.transient`) is retried with the
    project's backoff, as many times as the run's ``--max-retries`` (else our client's attempts), then
    raises :class:`Unanswered`; what inspect retried itself is not retried again; any other error (a
    wrong key, a refused request) propagates and stops the run, as in ``cc``.
    """
    settings = LLMSettings()
    retries = eval_max_retries()
    attempts = settings.max_attempts if retries is None else retries + 1
    attempt = 0
    while True:
        attempt += 1
        try:
            return await model.generate(messages, config=config)
        except Exception as exc:
            if not transient(exc):
                raise
            if attempt >= attempts or _retried_by_inspect(model, exc):
                raise Unanswered(f"no answer after {attempt} attempt(s): {describe(exc)}") from exc
            log.info("retrying after %s (attempt %d)", describe(exc), attempt)
            await asyncio.sleep(backoff(exc, attempt, settings.max_backoff))


def _retried_by_inspect(model: Model, exc: Exception) -> bool:
    decision = model.api.should_retry(exc)
    return bool(getattr(decision, "retry", decision))


async def ask(model: Model, question: ForecastingQuestion) -> Answer:
    """Our forecasting prompt and structured answer (the basic forecaster's, with its justification), through
    inspect's model; a probability is read leniently, a distribution must fit its schema."""
    messages, schema = basic_request(question)
    try:
        out = await generate(model, _chat(messages), GenerateConfig(response_schema=_schema(schema)))
    except Unanswered as exc:
        return Answer(raw="", error=str(exc))
    if out.error:
        return Answer(raw=out.completion, error=f"the model returned an error: {out.error}")
    if schema is ForecastAnswer:
        return parse_answer(out.completion)
    return parse_distribution(out.completion, question, schema)


async def _record(state: TaskState, answers: dict[str, Answer]) -> TaskState:
    state.store.set(ANSWERS_KEY, {field: a.model_dump() for field, a in answers.items()})
    summary = {field: a.prob if a.ok else None for field, a in answers.items()}
    state.output = ModelOutput.from_content(model=str(state.model), content=json.dumps(summary))
    return state


@solver(name=registered_name("forecast_tuple"))
def forecast_tuple() -> Solver:
    """Ask the model under evaluation each question of the tuple, separately and concurrently."""
    memo = _Memo()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        questions = questions_of(state.metadata)

        def one(q: ForecastingQuestion) -> Awaitable[Answer]:
            key = json.dumps([str(model), state.epoch, basic_request(q)[0]], sort_keys=True)
            return memo.get(key, lambda: ask(model, q))

        answers = await collect(*(one(q) for q in questions.values()))
        return await _record(state, dict(zip(questions, answers, strict=True)))

    return solve


class InspectLLM:
    """What our forecasters call (``structured``, ``text``), answered by inspect's model under evaluation.

    The forecaster's own ``model`` option is ignored: inspect's ``--model`` is the model.
    """

    async def structured(self, model: Any, messages: Any, response_model: type[BaseModel], **params: Any) -> LLMResult:
        config = GenerateConfig(response_schema=_schema(response_model), **_config(params))
        try:
            out = await generate(get_model(), _chat(list(messages)), config)
        except Unanswered as exc:
            return LLMResult(None, error=str(exc))
        text = out.completion
        if out.error:
            return LLMResult(None, error=f"the model returned an error: {out.error}", raw=text)
        error = f"no JSON object in the answer: {text[:120]!r}"
        for candidate in _json_texts(text):
            try:
                return LLMResult(response_model.model_validate_json(candidate), raw=text)
            except ValidationError as exc:
                error = f"the answer does not fit {response_model.__name__}: {exc.errors()[0]['msg']}"
        return LLMResult(None, error=error, raw=text)

    async def text(self, model: Any, messages: Any, **params: Any) -> LLMResult:
        try:
            out = await generate(get_model(), _chat(list(messages)), GenerateConfig(**_config(params)))
        except Unanswered as exc:
            return LLMResult(None, error=str(exc))
        if out.error:
            return LLMResult(None, error=f"the model returned an error: {out.error}", raw=out.completion)
        return LLMResult(out.completion, raw=out.completion)


def _config(params: dict[str, Any]) -> dict[str, Any]:
    ignored = sorted(set(params) - set(_CONFIG_PARAMS))
    if ignored:
        log.debug("request parameters not passed to inspect's model: %s", ", ".join(ignored))
    return {k: params[k] for k in _CONFIG_PARAMS if k in params}


def _json_texts(text: str) -> list[str]:
    out = [text.strip()]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        out.append(text[start : end + 1])
    return out


@solver(name=registered_name("forecaster_tuple"))
def forecaster_tuple(forecaster: str, options: dict[str, Any] | None = None) -> Solver:
    """Run one of our forecasters (``basic``, ``cot``, ``arbitrage:basic``...) on each question, its
    model calls answered by inspect's model."""
    _refuse_bare_model(forecaster)
    built = load_forecaster(forecaster, {k: str(v) for k, v in (options or {}).items()})
    built.attach(InspectLLM())  # type: ignore[arg-type]
    memo = _Memo()

    async def one(q: ForecastingQuestion) -> Answer:
        try:
            forecast = as_forecast(await built.forecast(q), q)
        except ForecastError as exc:
            return Answer(raw=exc.raw or "", error=str(exc))
        except WrongKind as exc:
            return Answer(error=str(exc))
        except (ValueError, TypeError) as exc:
            return Answer(error=f"invalid forecast: {str(exc).splitlines()[0]}")
        answer = Answer.of(forecast, raw=json.dumps(forecast.metadata, default=str))
        return answer.model_copy(update={"reasoning": _reasoning(forecast.metadata)})

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        questions = questions_of(state.metadata)
        key = [str(get_model()), state.epoch]
        answers = await collect(
            *(memo.get(json.dumps([*key, q.model_dump(mode="json")]), lambda q=q: one(q)) for q in questions.values())
        )
        return await _record(state, dict(zip(questions, answers, strict=True)))

    return solve


def _refuse_bare_model(spec: str) -> None:
    """``cc`` reads a bare model spec as the basic forecaster on that model; here the model is inspect's."""
    from ...forecasters.loading import ForecasterSpecError, forecaster_class, forecaster_names

    _, implied = forecaster_class(spec)
    name = spec.strip().partition(":")[0].lower()
    if "model" in implied and name not in forecaster_names():
        raise ForecasterSpecError(
            f"{spec!r} is not one of our forecasters ({', '.join(forecaster_names())}, or a class); "
            "the model is inspect's --model"
        )


def _reasoning(metadata: Any) -> str | None:
    if isinstance(metadata, dict):
        for key in ("reasoning", "reasoning_summary"):
            if isinstance(metadata.get(key), str):
                return metadata[key]
    return None
