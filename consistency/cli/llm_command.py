"""The LLM options every command that calls a model shares, declared once, and the decorator that gives
a command all of them in one line.

``@llm_command`` appends the model option and the shared options to the command's signature (typer
reads it) and hands the command one :class:`LLMArgs`; ``@llm_settings_command`` (``cc evaluate``, which
names its models otherwise) hands it the :class:`~consistency.llm.LLMSettings` alone. Each option's
parameter is named after the settings field it sets, so the values go to the settings as they are.
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

from ..llm import LLM, LLMSettings
from .bounds import positive
from .console import say

T = typing.TypeVar("T")


def _fallback(value: str) -> str:
    if value not in ("batch", "direct"):
        raise typer.BadParameter(f"must be 'batch' or 'direct', not {value!r}")
    return value


_OPTIONS: dict[str, tuple[Any, Any]] = {
    "model": (Annotated[str, typer.Option("--model", "-m", help="Model spec: gpt-4o, openrouter/..., URL::model, "
                                          "or local (bundled).")], "local"),
    "max_connections": (Annotated[int, typer.Option("--max-connections", min=1,
                                                    help="Concurrent requests per model.")], 16),
    "requests_per_minute": (Annotated[float | None, typer.Option("--rpm", min=0, help="Requests per minute per model "
                                                                 "(default or 0: no limit).")], None),
    "tokens_per_minute": (Annotated[float | None, typer.Option("--tpm", min=0, help="Tokens per minute per model "
                                                               "(default or 0: no limit).")], None),
    "timeout": (Annotated[float, typer.Option("--timeout", min=0, callback=positive,
                                              help="Seconds per request before it is retried.")], 60.0),
    "max_attempts": (Annotated[int, typer.Option("--max-attempts", min=1,
                                                 help="HTTP attempts per call on 429/5xx/timeouts.")], 6),
    "no_cache": (Annotated[bool, typer.Option("--no-cache/--cache", help="Neither read nor write the response cache "
                                              "(--cache: use it, e.g. on a resume).")], False),
    "cost_limit": (Annotated[float | None, typer.Option("--cost-limit", min=0, help="Stop issuing calls once this "
                                                        "many USD are spent.")], None),
    "batch": (Annotated[bool, typer.Option("--batch", help="Send requests through the provider's Batch API (/v1/files "
                                           "+ /v1/batches): about half the price, answers within 24 h; resumable. "
                                           "See the guide 'Batch mode and cc batches'.")], False),
    "batch_fallback": (Annotated[str, typer.Option("--batch-fallback", callback=_fallback, help="With --batch, where "
                                                   "answers that failed validation are asked again: batch (a follow-up "
                                                   "batch) or direct.")], "batch"),
    "batch_poll": (Annotated[float, typer.Option("--batch-poll", min=0, callback=positive, help="With --batch, seconds "
                                                 "before the first poll of a batch (then x1.5).")], 5.0),
    "transcript": (Annotated[Path | None, typer.Option("--transcript", help="Append every model call (prompt, answer, "
                                                       "usage) to this JSONL.")], None),
}  # fmt: skip


def settings(no_cache: bool = False, **values: Any) -> LLMSettings:
    """The LLM settings of the shared options' values (``--no-cache`` is the settings' ``cache=False``)."""
    return LLMSettings(cache=not no_cache, **values)


@dataclass
class LLMArgs:
    model: str
    settings: LLMSettings
    transcript: Path | None

    def client(self) -> LLM:
        return LLM(self.settings, transcript=self.transcript)

    def run(self, work: Callable[[LLM], Awaitable[T]]) -> T:
        """``work(llm)`` in one client session (the local model's start shown), its usage said at the end."""

        async def session() -> T:
            async with self.client() as llm:
                result = await work(llm)
            say([llm.stats.text()])
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


#: Decorates a command whose last parameter is ``llm_args: LLMArgs``.
llm_command = shared_options(
    _OPTIONS, "llm_args", lambda v: LLMArgs(v.pop("model"), transcript=v.pop("transcript"), settings=settings(**v))
)

#: Decorates a command that names its models otherwise (``cc evaluate --forecaster``); its last
#: parameter is ``llm_settings: LLMSettings``.
llm_settings_command = shared_options(
    {k: v for k, v in _OPTIONS.items() if k not in ("model", "transcript")}, "llm_settings", lambda v: settings(**v)
)


def run_calls(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``, with what the bundled local model does (its download, its start) shown meanwhile."""
    from .progress import local_model_status

    with local_model_status():
        return asyncio.run(work)
