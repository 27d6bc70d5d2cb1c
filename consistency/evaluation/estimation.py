"""What a run would cost, before it is made: model calls, prompt and completion tokens, dollars.

:func:`estimate` plans a run exactly as :func:`~consistency.evaluation.evaluate` does (the same tuples, the
same distinct forecasts) and runs the forecaster's own ``forecast`` on every one against a
:class:`~.dry.DryLLM`, which counts each request the forecaster makes and sends none. So the calls are those
of the run, prompts are counted from the very messages and schemas the run would send, answers already in the
response cache count as cache hits (free), and only the answers' lengths are expected rather than known (see
:mod:`.dry` for how). No run directory is written and no model is called; the local model is not started.

A forecaster is only run this way when its calls all go through the project's LLM client: the built-in ones
(``basic``, ``cot``, ``crowd``, ``arbitrage`` with the ``llm`` or ``template`` instantiator...) and user classes
that say so with ``estimable = True``. A forecasting-tools bot (its calls go through litellm) or other user code
is refused with the reason, since running it could call a model.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..checks import Check
from ..errors import InputError
from ..forecasters import Forecaster, load_forecaster
from .asking import Ask, RunOptions
from .benchmark import load_benchmark
from .dry import DryLLM, ModelTally, as_dict

log = logging.getLogger(__name__)


class EstimateError(InputError):
    """A run that cannot be estimated without calling a model (the reason is the message)."""


@dataclass
class Estimate:
    """What a run would ask and spend; :attr:`models` per model, the properties over all of them."""

    forecaster: str
    forecasts: int  # distinct forecasts the run needs
    answered: int = 0  # already answered in the run directory (an estimate of a resume)
    models: list[ModelTally] = field(default_factory=list)
    not_simulated: int = 0  # forecasts that failed in the dry run (their remaining calls are not counted)
    reasons: list[str] = field(default_factory=list)  # a few of those failures' reasons

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.models)

    @property
    def cache_hits(self) -> int:
        return sum(m.cache_hits for m in self.models)

    @property
    def prompt_tokens(self) -> int:
        return sum(m.prompt_tokens for m in self.models)

    @property
    def completion_tokens(self) -> int:
        return sum(m.completion_tokens for m in self.models)

    @property
    def cost(self) -> float:
        """USD of the priced models (see :attr:`unpriced`)."""
        return sum(m.cost or 0.0 for m in self.models)

    @property
    def unpriced(self) -> list[str]:
        """Models with calls but no price (llm/prices.json, CC_PRICES): their dollars are not in :attr:`cost`."""
        return [m.model for m in self.models if m.cost is None and m.calls]

    def table(self) -> tuple[str, tuple[str, ...], list[tuple[object, ...]]]:
        """Title, columns and a row per model (and a total row when there are several), as the dry run shows them."""
        rows: list[tuple[object, ...]] = [
            (m.model, m.calls, m.cache_hits, m.prompt_tokens, m.completion_tokens,
             "no price" if m.cost is None else f"{m.cost:.4f}") for m in self.models
        ]  # fmt: skip
        if len(self.models) != 1:
            rows.append(("total", self.calls, self.cache_hits, self.prompt_tokens, self.completion_tokens,
                         f"{self.cost:.4f}"))  # fmt: skip
        columns = ("model", "calls", "cache hits", "prompt tokens", "completion tokens", "USD")
        return f"What the run would ask: {self.forecaster}", columns, rows

    def as_dict(self) -> dict[str, Any]:
        return {
            "forecaster": self.forecaster,
            "forecasts": self.forecasts,
            "already_answered": self.answered,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": round(self.cost, 6),
            "unpriced_models": self.unpriced,
            "not_simulated": self.not_simulated,
            "not_simulated_reasons": self.reasons,
            "models": [as_dict(m) for m in self.models],
        }


def estimate(
    forecaster: Forecaster | str,
    *,
    tuples: str | Path | None = None,
    checks: Sequence[str | Check] | None = None,
    limit: int | None = None,
    seed: int = 0,
    forecaster_options: dict[str, str] | None = None,
    options: RunOptions | None = None,
) -> Estimate:
    """What :func:`~consistency.evaluation.evaluate` with the same arguments would call and spend."""
    from .runner import plan

    sets = load_benchmark(tuples, checks, limit, seed)
    loaded = load_forecaster(forecaster, forecaster_options)
    asks, _ = plan(sets, loaded.context_dependent)
    return estimate_asks(loaded, asks, options)


def estimate_questions(
    forecaster: Forecaster | str,
    questions: str | Path,
    *,
    limit: int | None = None,
    seed: int = 0,
    forecaster_options: dict[str, str] | None = None,
    options: RunOptions | None = None,
) -> Estimate:
    """What :func:`~consistency.evaluation.ground_truth.evaluate_questions` would call and spend."""
    from .asking import question_key
    from .ground_truth import load_questions

    items, _ = load_questions(questions, limit, seed)
    loaded = load_forecaster(forecaster, forecaster_options)
    return estimate_asks(loaded, [Ask(question_key(q), q) for q in items], options)


def estimate_resume(
    run_dir: str | Path, *, forecaster: Forecaster | None = None, options: RunOptions | None = None
) -> Estimate:
    """What finishing an unfinished run would still call and spend (its answered forecasts are not asked)."""
    from .asking import question_key
    from .ground_truth import load_questions
    from .rundir import RunDir
    from .runner import ConsistencyRecord, QuestionsRecord, plan, reopen_run

    if RunDir(run_dir).meta().kind == QuestionsRecord.kind:
        run, questions, loaded, options = reopen_run(run_dir, QuestionsRecord, forecaster, options)
        items, _ = load_questions(questions.questions_file, questions.limit, questions.seed)
        asks = [Ask(question_key(q), q) for q in items]
    else:
        run, tuples, loaded, options = reopen_run(run_dir, ConsistencyRecord, forecaster, options)
        bench = tuples.benchmark
        asks, _ = plan(load_benchmark(bench.tuples, bench.checks, bench.limit, bench.seed), loaded.context_dependent)
    done = _answered(run.journal)
    pending = [a for a in asks if a.key not in done]
    found = estimate_asks(loaded, pending, options)
    found.forecasts, found.answered = len(asks), len(asks) - len(pending)
    return found


def estimate_asks(forecaster: Forecaster, asks: Sequence[Ask], options: RunOptions | None = None) -> Estimate:
    """Run ``forecaster`` on ``asks`` against a :class:`~.dry.DryLLM` and sum up what it asked."""
    problem = not_estimable(forecaster)
    if problem is not None:
        raise EstimateError(problem)
    options = options or RunOptions()
    found = Estimate(forecaster.label, len(asks))

    def seen(outcome: Any) -> None:
        if not outcome.ok:
            found.not_simulated += 1
            if len(found.reasons) < 3 and outcome.error not in found.reasons:
                found.reasons.append(outcome.error)

    async def go() -> DryLLM:
        dry = DryLLM(options.llm)
        forecaster.attach(dry)
        try:
            await forecaster.forecast_many(
                [a.question for a in asks],
                occurrences=[a.occurrence for a in asks],
                concurrency=max(options.concurrency, 1),
                timeout=None,
                on_outcome=seen,
                stop_after_same_error=None,
            )
        finally:
            forecaster.attach(None)
            await dry.aclose()
        return dry

    dry = asyncio.run(go())
    found.models = sorted(dry.tallies.values(), key=lambda m: m.model)
    if found.not_simulated:
        log.info("%d forecast(s) failed in the dry run: their later calls are not counted", found.not_simulated)
    return found


def not_estimable(forecaster: Forecaster) -> str | None:
    """Why ``forecaster`` cannot be run against a recording client (None when it can): it, or a forecaster it
    delegates to, could call a model other than through the project's LLM client."""
    from ..forecasters import BotForecaster

    cls = type(forecaster)
    bot = isinstance(forecaster, BotForecaster)
    flag = cls.estimable
    if flag is None:
        flag = cls.__module__.startswith("consistency.forecasters.") and not bot
    if not flag:
        what = "a forecasting-tools bot, whose calls go through litellm" if bot else "user code"
        hint = (
            "" if bot else "; a class whose forecast calls models only through self.llm says so with estimable = True"
        )
        return (
            f"cannot estimate {forecaster.label} without running it: {cls.__name__} is {what}, and running it "
            f"could call a model{hint}"
        )
    instantiator = getattr(forecaster, "instantiator", None)
    if instantiator is not None and not isinstance(instantiator, str):
        return f"cannot estimate {forecaster.label}: its instantiator is user code ({type(instantiator).__name__})"
    for child in forecaster.children():
        problem = not_estimable(child)
        if problem is not None:
            return problem
    return None


def _answered(journal: Path) -> set[str]:
    """Keys the run's journal holds a forecast for (read only: the run is not opened, locked or repaired)."""
    from ..jsonl import iter_json_lines

    if not journal.is_file():
        return set()
    latest = {obj["key"]: obj for _, obj in iter_json_lines(journal) if isinstance(obj, dict) and "key" in obj}
    return {key for key, record in latest.items() if record.get("forecast") is not None}
