"""The LLM options every command that calls a model shares, and the decorator that gives a command all of
them in one line.

The options are :class:`~consistency.llm.LLMSettings`' documented fields (see :mod:`.declared`), so each
goes to the settings as it is. ``@llm_command`` adds the model and transcript options too and hands the
command one :class:`LLMArgs`; ``@llm_settings_command`` (``cc evaluate``, which names its models
otherwise) hands it the settings alone.
"""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from annotated_doc import Doc

from ..llm.models import LLMSettings
from .console import say
from .declared import Flags, as_option, declared_fields, options_from, shared_options

if TYPE_CHECKING:
    from ..llm import LLM

T = typing.TypeVar("T")

#: The flags that differ from the settings fields' names.
_FLAGS: Flags = {"requests_per_minute": "--rpm", "tokens_per_minute": "--tpm", "cache": "--cache/--no-cache",
                 "batch": "--batch"}  # fmt: skip
_MODEL = Annotated[str, Doc("Model spec: gpt-4o, openrouter/..., URL::model, or local (bundled).")]
_TRANSCRIPT = Annotated[Path | None, Doc("Append every model call (prompt, answer, usage) to this JSONL.")]


@dataclass
class LLMArgs:
    model: str
    settings: LLMSettings
    transcript: Path | None

    def client(self) -> LLM:
        from ..llm import LLM

        return LLM(self.settings, transcript=self.transcript)

    def run(self, work: Callable[[LLM], Awaitable[T]]) -> T:
        """``work(llm)`` in one client session (the local model's start shown), its usage said at the end."""

        async def session() -> T:
            async with self.client() as llm:
                result = await work(llm)
            say([llm.stats.text()])
            return result

        return run_calls(session())


#: Decorates a command whose last parameter is ``llm_args: LLMArgs``.
llm_command = shared_options(
    {"model": as_option(_MODEL, "local", ("--model", "-m")),
     **{name: as_option(a, d, _FLAGS.get(name, ())) for name, (a, d) in declared_fields(LLMSettings).items()},
     "transcript": as_option(_TRANSCRIPT, None, "--transcript")},
    "llm_args",
    lambda v: LLMArgs(v.pop("model"), transcript=v.pop("transcript"), settings=LLMSettings(**v)),
)  # fmt: skip

#: Decorates a command that names its models otherwise (``cc evaluate --forecaster``); its last
#: parameter is ``llm_settings: LLMSettings``.
llm_settings_command = options_from(LLMSettings, "llm_settings", flags=_FLAGS)


def run_calls(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``, with what the bundled local model does (its download, its start) shown meanwhile."""
    from .progress import local_model_status

    with local_model_status():
        return asyncio.run(work)
