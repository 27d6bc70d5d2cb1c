"""A decorator giving a command the model option and the shared LLM options in one line.

The generation commands all call models the same way; declaring a dozen identical options in
each would repeat them five times. ``@llm_command`` appends them to the command's signature
(typer reads it) and hands the command one :class:`LLMArgs`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import typing
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from ..llm import LLM, LLMSettings, RunStats
from . import llm_options as opt
from .console import err

T = typing.TypeVar("T")

Model = Annotated[
    str, typer.Option("--model", "-m", help="Model spec: gpt-4o, openrouter/..., URL::model, or local (bundled).")
]
Transcript = Annotated[
    Path | None, typer.Option("--transcript", help="Append every model call (prompt, answer, usage) to this JSONL.")
]

_OPTIONS: dict[str, tuple[Any, Any]] = {
    "model": (Model, "local"),
    "max_connections": (opt.MaxConnections, 16),
    "rpm": (opt.RequestsPerMinute, None),
    "tpm": (opt.TokensPerMinute, None),
    "timeout": (opt.Timeout, 60.0),
    "max_attempts": (opt.MaxAttempts, 6),
    "no_cache": (opt.NoCache, False),
    "cost_limit": (opt.CostLimit, None),
    "batch": (opt.Batch, False),
    "batch_fallback": (opt.BatchFallback, "batch"),
    "batch_poll": (opt.BatchPoll, 5.0),
    "transcript": (Transcript, None),
}


@dataclass
class LLMArgs:
    model: str
    values: dict[str, Any]
    transcript: Path | None

    @property
    def hosted(self) -> bool:
        return self.model != "local"

    @property
    def settings(self) -> LLMSettings:
        return opt.settings(**{k: v for k, v in self.values.items()})

    def client(self) -> LLM:
        return LLM(self.settings, transcript=self.transcript)

    def run(self, work: Callable[[LLM], Awaitable[T]]) -> T:
        """``work(llm)`` in one client session (the local model's start shown), its usage said at the end."""

        async def session() -> T:
            async with self.client() as llm:
                result = await work(llm)
            print_usage(llm.stats)
            return result

        return run_calls(session())


def shared_options(options: dict[str, tuple[Any, Any]], param: str, build: Callable[[dict[str, Any]], Any]):
    """Append ``options`` (name → (annotation, default)) to a command; it gets ``build(values)`` as ``param``."""

    def decorate(func):
        hints = typing.get_type_hints(func, include_extras=True)
        own = [p.replace(annotation=hints[p.name]) for p in inspect.signature(func).parameters.values()]
        own = [p for p in own if p.name != param]
        kw_own = [p for p in own if p.kind == inspect.Parameter.KEYWORD_ONLY]
        own = [p for p in own if p.kind != inspect.Parameter.KEYWORD_ONLY]
        added = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            for name, (annotation, default) in options.items()
        ]

        @functools.wraps(func)
        def wrapper(**kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in options}
            return func(**kwargs, **{param: build(values)})

        params = [*own, *kw_own, *added]
        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


def _llm_args(values: dict[str, Any]) -> LLMArgs:
    model, transcript = values.pop("model"), values.pop("transcript")
    return LLMArgs(model, values, transcript)


#: Decorates a command whose last parameter is ``llm_args: LLMArgs``.
llm_command = shared_options(_OPTIONS, "llm_args", _llm_args)


#: Decorates a command that names its models otherwise (``cc evaluate --forecaster``); its last
#: parameter is ``llm_settings: LLMSettings``.
llm_settings_command = shared_options(
    {k: v for k, v in _OPTIONS.items() if k not in ("model", "transcript")},
    "llm_settings",
    lambda values: opt.settings(**values),
)


def print_usage(stats: RunStats) -> None:
    """Calls, tokens and cost of a run, on stderr."""
    cost = f"${stats.cost:.4f}" + (f" (+{stats.unpriced_calls} unpriced calls)" if stats.unpriced_calls else "")
    err.print(
        f"LLM: {stats.calls} calls, {stats.cache_hits} cache hits, {stats.retries} retries, {stats.failures} failures; "
        f"{stats.prompt_tokens}+{stats.completion_tokens} tokens; {cost}"
    )


def run_calls(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``, with what the bundled local model does (its download, its start) shown meanwhile."""
    from .progress import local_model_status

    with local_model_status():
        return asyncio.run(work)
