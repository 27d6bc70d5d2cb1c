"""What a forecaster is: one async method to implement; the framework does the rest.

A subclass implements ``forecast(question)``, returning a :class:`~consistency.models.Forecast` for a yes/no
question, a :class:`~consistency.models.ChoiceForecast` for a multiple-choice one and a
:class:`~consistency.models.NumericForecast` for a numeric or date one (what comes back is checked against the
question's type: a mismatch is a failed forecast saying so). The framework adds a sync wrapper,
concurrent batches with per-question timeouts and failure capture, a config dump taken from the
constructor's arguments (for ``run.json``), a stable name, and a shared LLM session for
forecasters that call models.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from ..errors import Interrupted, RunFailed
from ..llm import LLM, LLMSettings
from ..llm.fatal import FATAL_AFTER, FatalError
from ..llm.secrets import redact
from ..llm.waiting import within_work_time
from ..models import (
    BINARY_TYPES,
    AnyForecast,
    ChoiceForecast,
    Forecast,
    ForecastingQuestion,
    NumericForecast,
    forecast_class,
    parse_forecast,
    probability_problem,
)

log = logging.getLogger(__name__)


class ForecastError(RunFailed):
    """A forecaster could not produce a forecast; ``raw`` keeps what the model said, if anything."""

    def __init__(self, reason: str, raw: str | None = None) -> None:
        super().__init__(reason)
        self.raw = raw


class CallsStopped(Interrupted):
    """No more model calls are made in this run (a spending cap was reached): the question that needed one is
    left unasked, not recorded as failed, so a resume asks it. Raised by the run's LLM client."""


def sync_forecast_problem(cls: type) -> str | None:
    """Why ``cls`` cannot be run, when its ``forecast`` is a plain ``def`` (None when it is ``async def``).

    The framework awaits ``forecast`` under a per-question timeout, many at once on one event loop, with
    one shared async LLM client; a blocking method cannot be timed out, cancelled by Ctrl-C or run
    concurrently, so it is refused rather than quietly moved to a thread (a user who wants a thread
    says so with ``asyncio.to_thread``, and then knows that a timed-out thread runs on). A decorated
    method counts as ``async`` when the function it wraps is.
    """
    method = getattr(cls, "forecast", None)
    if method is None or getattr(method, "__isabstractmethod__", False):
        return None  # not implemented at all: Python's own "abstract method" error says so
    if inspect.iscoroutinefunction(method) or inspect.iscoroutinefunction(inspect.unwrap(method)):
        return None
    return (
        f"{cls.__name__}.forecast is a plain function (def): the framework awaits it, so declare it "
        "`async def forecast(self, question)`; blocking work inside it can run in a thread with "
        "`await asyncio.to_thread(...)`"
    )


@dataclass(frozen=True)
class Occurrence:
    """Where a question is being asked: which check, field and tuple (for context-aware forecasters)."""

    check: str
    field: str
    tuple_ids: tuple[str, ...]


@dataclass
class CallNote:
    """What the model calls behind one forecast cost; filled by LLM-based forecasters."""

    calls: int = 0
    cache_hits: int = 0
    cost: float = 0.0
    tokens: int = 0

    def add(self, result: Any) -> None:
        self.calls += 1
        self.cache_hits += int(bool(result.cache_hit))
        self.tokens += result.usage.prompt_tokens + result.usage.completion_tokens
        self.cost += result.usage.cost or 0.0

    def merge(self, other: CallNote) -> None:
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.cost += other.cost
        self.tokens += other.tokens

    @property
    def all_cached(self) -> bool:
        return self.calls > 0 and self.cache_hits == self.calls


_note: contextvars.ContextVar[CallNote | None] = contextvars.ContextVar("consistency_call_note", default=None)
_occurrence: contextvars.ContextVar[Occurrence | None] = contextvars.ContextVar("consistency_occurrence", default=None)


def note_call(result: Any) -> None:
    """Record an LLM result against the forecast being made (no-op outside the framework)."""
    note = _note.get()
    if note is not None:
        note.add(result)


def current_occurrence() -> Occurrence | None:
    return _occurrence.get()


@dataclass
class ForecastOutcome:
    """A question's forecast, or why there is none; never an exception."""

    question: ForecastingQuestion
    forecast: AnyForecast | None = None
    error: str | None = None
    raw: str | None = None
    note: CallNote = field(default_factory=CallNote)
    seconds: float = 0.0
    occurrence: Occurrence | None = None
    raised: bool = False  # the forecaster raised an exception of its own (not a model's bad answer)
    stopped: bool = False  # not asked: the run stopped making calls (CallsStopped) before it could be

    @property
    def ok(self) -> bool:
        return self.forecast is not None


class Forecaster(ABC):
    """Subclass and implement :meth:`forecast`; constructor arguments become the recorded config.

    ``context_dependent = True`` asks the framework to call :meth:`forecast` once per occurrence of
    a question in a tuple (see :func:`current_occurrence`) instead of once per distinct question.
    """

    #: Name in the registry and the CLI (``--forecaster basic``); defaults to the class name.
    name: ClassVar[str] = ""
    context_dependent: ClassVar[bool] = False
    #: Whether a cost estimate (``cc evaluate --dry-run``) may run :meth:`forecast` against a recording LLM
    #: client: true when every call it makes goes through ``self.llm``. None: the framework's own forecasters
    #: are, user code is not (it could call a model some other way, which a dry run must not do).
    estimable: ClassVar[bool | None] = None
    _config: dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _recording_init(cls.__dict__["__init__"])  # type: ignore[method-assign]

    @abstractmethod
    async def forecast(self, question: ForecastingQuestion) -> AnyForecast:
        """The forecast for ``question``: for a yes/no question the probability that it resolves YES (a
        :class:`~consistency.models.Forecast`, or a plain number); for a multiple-choice question a
        :class:`~consistency.models.ChoiceForecast` (a probability per option, in the question's order); for a
        numeric or date question a :class:`~consistency.models.NumericForecast` (a CDF on the question's grid, e.g.
        ``NumericForecast.from_percentiles(question, {0.1: low, 0.5: mid, 0.9: high})``)."""

    # ----------------------------------------------------------------- identity
    @property
    def label(self) -> str:
        """Short, stable name for run directories and tables, e.g. ``basic_gpt-4o``."""
        model = self.config().get("model")
        base = self.name or type(self).__name__
        return f"{base}_{model}" if isinstance(model, str) else base

    def config(self) -> dict[str, Any]:
        """The constructor's arguments, JSON-ready and with secrets scrubbed."""
        return {k: _jsonable(v) for k, v in getattr(self, "_config", {}).items()}

    def describe(self) -> dict[str, Any]:
        return {"forecaster_class": type(self).__name__, "name": self.label, "full_forecaster_config": self.config()}

    def children(self) -> Sequence[Forecaster]:
        """Forecasters this one delegates to (crowds, wrappers)."""
        return ()

    def use_run_dir(self, path: Path | None) -> None:
        """Where the current run's directory is (None when it ends), for forecasters that keep
        side files there (the ArbitrageForecaster's call trees); passed on to children."""
        for child in self.children():
            child.use_run_dir(path)

    # ----------------------------------------------------------------- LLM session
    def attach(self, llm: LLM | None) -> None:
        """Give this forecaster (and its children) the shared LLM client of a run."""
        self.llm = llm
        for child in self.children():
            child.attach(llm)

    @contextlib.asynccontextmanager
    async def session(self, settings: LLMSettings | None = None, transcript: str | None = None) -> AsyncIterator[None]:
        """A fresh LLM client for the duration of the block, unless one is attached already."""
        if getattr(self, "llm", None) is not None:
            yield
            return
        async with LLM(settings, transcript=transcript) as llm:
            self.attach(llm)
            try:
                yield
            finally:
                self.attach(None)

    # ----------------------------------------------------------------- framework side
    async def forecast_safely(
        self, question: ForecastingQuestion, *, timeout: float | None = None, occurrence: Occurrence | None = None
    ) -> ForecastOutcome:
        """One forecast; raising, timing out or an invalid probability become a recorded failure."""
        note = CallNote()
        parent = _note.get()  # a crowd member's calls also count for the crowd's forecast
        note_token = _note.set(note)
        occ_token = _occurrence.set(occurrence)
        start = time.perf_counter()
        outcome = ForecastOutcome(question, note=note, occurrence=occurrence)
        try:
            work = self.forecast(question)
            if not inspect.isawaitable(work):  # a plain `def forecast` that slipped past load_forecaster
                raise TypeError(sync_forecast_problem(type(self)) or "forecast() must be `async def`")
            result = await within_work_time(work, timeout)  # time queued for the model not counted
        except TimeoutError:
            outcome.error = f"timed out after {timeout:g} s"
        except ForecastError as exc:
            outcome.error, outcome.raw = redact(str(exc)), exc.raw
        except (FatalError, CallsStopped):
            raise  # the run stops; this question was not really asked
        except Exception as exc:
            outcome.error, outcome.raised = redact(f"{type(exc).__name__}: {_first_line(exc)}"), True
        else:
            try:
                outcome.forecast = as_forecast(result, question)
            except WrongKind as exc:
                outcome.error = str(exc)
            except (ValueError, TypeError) as exc:  # a pydantic ValidationError too: its first error, in one line
                outcome.error = f"invalid forecast: {_first_line(exc)}"
        finally:
            _note.reset(note_token)
            _occurrence.reset(occ_token)
            if parent is not None:
                parent.merge(note)
        outcome.seconds = time.perf_counter() - start
        if outcome.error:
            log.info("forecast failed for %s: %s", question.id, outcome.error)
        return outcome

    async def forecast_many(
        self,
        questions: Iterable[ForecastingQuestion],
        *,
        occurrences: Iterable[Occurrence | None] | None = None,
        concurrency: int = 16,
        timeout: float | None = None,
        on_outcome: Callable[[ForecastOutcome], None] | None = None,
        stop_after_same_error: int | None = FATAL_AFTER,
    ) -> list[ForecastOutcome]:
        """Forecast concurrently (at most ``concurrency`` at once); results in input order.

        ``on_outcome`` sees each outcome as soon as it exists (to journal or display it), except those of
        questions left unasked because the run stopped making calls (``stopped``: a spending cap). Raises
        :class:`FatalError`, with no new question started, when the model layer meets an error that
        cannot succeed on retry, or when the forecaster raised the same exception on each of the first
        ``stop_after_same_error`` questions it finished (a bug that would fail every question).
        """
        items = list(questions)
        places = list(occurrences) if occurrences is not None else [None] * len(items)
        gate = asyncio.Semaphore(max(1, concurrency))
        same = _SameError(self.label, stop_after_same_error)

        async def one(q: ForecastingQuestion, place: Occurrence | None) -> ForecastOutcome:
            async with gate:
                same.check()  # tripped while this one waited: start nothing new
                try:
                    outcome = await self.forecast_safely(q, timeout=timeout, occurrence=place)
                except CallsStopped as exc:  # left for a resume: not journaled, not a failure
                    return ForecastOutcome(q, error=str(exc), occurrence=place, stopped=True)
            if on_outcome is not None:
                on_outcome(outcome)
            same.see(outcome)
            return outcome

        async with self.session():
            tasks = [asyncio.ensure_future(one(q, p)) for q, p in zip(items, places, strict=True)]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:  # a fatal error, Ctrl-C: start nothing more, wait for nothing more
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    def forecast_sync(self, question: ForecastingQuestion | str, **fields: Any) -> AnyForecast:
        """Blocking convenience for scripts and notebooks; raises :class:`ForecastError` on failure."""
        if isinstance(question, str):
            question = ForecastingQuestion(title=question, **fields)

        async def run() -> ForecastOutcome:
            async with self.session():
                return await self.forecast_safely(question)

        outcome = asyncio.run(run())
        if outcome.forecast is None:
            raise ForecastError(outcome.error or "no forecast", outcome.raw)
        return outcome.forecast

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({args})"


@dataclass
class _SameError:
    """Trips when the first ``after`` outcomes are all the same exception raised by the forecaster."""

    label: str
    after: int | None
    streak: int = 0
    error: str | None = None
    answered: bool = False
    reason: str | None = None

    def see(self, outcome: ForecastOutcome) -> None:
        if self.after is None or self.answered:
            return
        if outcome.ok or not outcome.raised:
            self.answered = outcome.ok or self.answered
            self.streak, self.error = 0, None
            return
        self.streak = self.streak + 1 if outcome.error == self.error else 1
        self.error = outcome.error
        if self.streak >= self.after and self.reason is None:
            self.reason = (
                f"forecaster {self.label} raised the same error on each of the first {self.streak} questions "
                f"({self.error}); fix the forecaster, then resume the run"
            )
        self.check()

    def check(self) -> None:
        if self.reason is not None:
            raise FatalError(self.reason)


def _recording_init(init: Callable[..., None]) -> Callable[..., None]:
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self: Forecaster, *args: Any, **kwargs: Any) -> None:
        if not hasattr(self, "_config"):  # the most derived __init__ records; super().__init__ calls don't
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            config = dict(bound.arguments)
            config.pop("self", None)
            for name, param in signature.parameters.items():
                if param.kind is param.VAR_KEYWORD:
                    config.update(config.pop(name, {}))
                elif param.kind is param.VAR_POSITIONAL:
                    config[name] = list(config.pop(name, ()))
            self._config = config
        init(self, *args, **kwargs)

    return wrapper


class WrongKind(RunFailed, TypeError):
    """A forecast of another kind than the question takes (a probability for a multiple-choice question...)."""


#: What each kind of question takes, as the failure of a forecaster that returned something else says it.
_TAKES = {
    Forecast: "a Forecast (a probability of YES)",
    ChoiceForecast: "a ChoiceForecast (a probability per option)",
    NumericForecast: "a NumericForecast (a CDF on the question's grid, e.g. NumericForecast.from_percentiles)",
}


def as_forecast(result: Any, question: ForecastingQuestion) -> AnyForecast:
    """``result`` as the forecast ``question`` takes, re-validated (its fields may have been changed after it
    was made); raises :class:`WrongKind` for a forecast of another kind, ValueError/TypeError when it is invalid."""
    kind = question.question_type
    if isinstance(result, int | float) and not isinstance(result, bool):
        if kind not in BINARY_TYPES:
            raise _wrong_kind(question, "a plain number")
        if not math.isfinite(result) or not 0.0 <= result <= 1.0:
            raise ValueError(probability_problem(result))
        return Forecast(prob=float(result))
    if isinstance(result, Forecast | ChoiceForecast | NumericForecast):
        data: Any = result.model_dump()
        given = type(result).__name__
    elif isinstance(result, Mapping):
        data, given = dict(result), None
    else:
        wanted = forecast_class(kind).__name__
        raise TypeError(f"forecast() must return a {wanted} for a {kind} question, got {type(result).__name__}")
    if given is not None and not isinstance(result, forecast_class(kind)):
        raise _wrong_kind(question, f"a {given}")
    keys = [k for k in _KEYS.values() if k in data]
    if given is None and len(keys) == 1 and keys[0] != _KEYS[forecast_class(kind)]:
        raise _wrong_kind(question, f"a forecast with {keys[0]!r}")
    return parse_forecast(question, data)


_KEYS: dict[type, str] = {Forecast: "prob", ChoiceForecast: "probs", NumericForecast: "cdf"}


def _wrong_kind(question: ForecastingQuestion, given: str) -> WrongKind:
    takes = _TAKES[forecast_class(question.question_type)]
    kind = question.question_type.replace("_", " ")
    return WrongKind(f"the forecaster returned {given} for a {kind} question, which takes {takes}")


def _first_line(exc: BaseException) -> str:
    """One line saying what went wrong. A pydantic error's own first line ("1 validation error for
    Forecast") names neither the field nor the reason: its first error is given instead."""
    if isinstance(exc, ValidationError):
        return validation_sentence(exc)
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def validation_sentence(exc: ValidationError) -> str:
    """``Forecast.prob: probability must be within [0, 1], got 70 (if that is a percentage, give 0.7)``: the model, the
    field and the reason of the first error (and how many more there are)."""
    errors = exc.errors(include_url=False)
    if not errors:
        return f"invalid {exc.title}"
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    reason = first["msg"].removeprefix("Value error, ")
    if first["type"] != "value_error" and "input" in first and not isinstance(first["input"], dict | list):
        reason += f", got {first['input']!r}"
    more = f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else ""
    return f"{exc.title}{'.' + where if where else ''}: {reason}{more}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, Forecaster):
        return value.describe()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact(str(value))
