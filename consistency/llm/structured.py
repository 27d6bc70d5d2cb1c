"""Structured answers: the part of ``instructor`` a call needs, and reading what a completion said.

``instructor``'s patched ``create`` wraps every call in machinery this project does not use (hooks,
templating, its own cache, token budgets, a tenacity loop, usage models deep-copied per attempt),
which cost more CPU per call than the HTTP client itself. :func:`ask_structured` keeps what a
structured call needs, using instructor's own functions for the mode so the wire is unchanged:
the request's additions (the tool or response format, worked out once per response model), the
parsing and validation of the answer (strict, as instructor's default), and the re-asks after an
answer that fails validation (the same messages instructor would add). The bytes on the wire,
re-asks included, are those of ``create_with_completion`` (``tests/llm/test_llm_structured.py``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import instructor
from instructor.v2.core.errors import ResponseParsingError
from instructor.v2.core.function_calls import response_schema
from instructor.v2.core.providers import Provider
from instructor.v2.core.registry import ModeHandlers, mode_registry, normalize_mode
from pydantic import BaseModel, ValidationError

from ..errors import RunFailed
from .accounting import Usage
from .models import LLMResult

#: Answers worth re-asking: they did not parse or did not validate (instructor's list, less async validation).
REASKABLE = (ValidationError, json.JSONDecodeError, ResponseParsingError)


def memoize_async_validator_check() -> None:
    """instructor re-walks the response model's class hierarchy up to seven times per request
    to refuse async validators: a pure check of the class that costs a millisecond a call, so
    we remember the classes that passed (same behaviour; pinned instructor 1.17)."""
    import sys

    from instructor.v2.validation import async_validators

    original = async_validators.reject_async_validators
    if getattr(original, "memoized", False):
        return
    passed: set[Any] = set()

    def reject_async_validators(model: Any) -> None:
        try:
            if model in passed:
                return
        except TypeError:  # unhashable: check every time
            return original(model)
        original(model)
        passed.add(model)

    reject_async_validators.memoized = True  # type: ignore[attr-defined]
    for name, module in list(sys.modules.items()):
        if name.startswith("instructor") and getattr(module, "reject_async_validators", None) is original:
            module.reject_async_validators = reject_async_validators


memoize_async_validator_check()


@cache
def wrapper_class(model: type[BaseModel]) -> type[BaseModel]:
    """instructor's wrapper class for ``model``, built once (instructor skips models already wrapped)."""
    return response_schema(model)


@cache
def cached_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def cut(completion: Any, usage: Usage, params: dict[str, Any]) -> LLMResult:
    """An answer the server stopped at its token limit: where (the request's limit, else the tokens it
    produced) and the partial text, for :meth:`~.client.LLM._ask_longer`."""
    limit = params.get("max_completion_tokens") or params.get("max_tokens") or usage.completion_tokens
    return LLMResult(
        None,
        error=f"answer truncated at {limit} tokens",
        raw=raw_text(completion),
        usage=usage,
        truncated_at=int(limit),
    )


def raw_text(completion: Any) -> str | None:
    try:
        message = completion.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return None
    calls = getattr(message, "tool_calls", None)
    if calls:
        return calls[0].function.arguments
    return message.content


@dataclass(frozen=True)
class Plan:
    """How one response model is asked for in one mode."""

    model: type[BaseModel]  # instructor's class for it, which parses the answer
    handlers: ModeHandlers
    extra: dict[str, Any] | None  # what the mode adds to every request, unless it rewrites the messages

    def request(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The create arguments for ``kwargs`` (model, messages, params), as instructor would send them."""
        if self.extra is not None:
            kwargs = {**kwargs, **self.extra}
        else:
            _, kwargs = self.handlers.request_handler(response_model=self.model, kwargs=kwargs)
        converter = self.handlers.message_converter
        messages = kwargs.get("messages")
        kwargs["messages"] = converter(messages) if converter and messages is not None else list(messages or [])
        return kwargs


@cache
def plan(response_model: type[BaseModel], mode: instructor.Mode) -> Plan:
    mode = normalize_mode(Provider.OPENAI, mode)
    handlers = mode_registry.get_handlers(Provider.OPENAI, mode)
    model = wrapper_class(response_model)  # refuses models with async validators, as instructor does
    probe = [{"role": "user", "content": "?"}]
    _, added = handlers.request_handler(response_model=model, kwargs={"messages": probe})
    fixed = added.get("messages") == probe  # the mode adds parameters only, not instructions to the messages
    extra = {k: v for k, v in added.items() if k != "messages"} if fixed else None
    return Plan(model, handlers, extra)


class ValidationFailed(RunFailed):
    """Every answer failed validation: the last error, the last completion, how many were asked for."""

    def __init__(self, error: BaseException, completion: Any, attempts: int) -> None:
        super().__init__(str(error))
        self.error, self.completion, self.attempts = error, completion, attempts


async def ask_structured(
    create: Callable[..., Awaitable[Any]],
    plan: Plan,
    max_reasks: int,
    kwargs: dict[str, Any],
    completions: list[Any],
) -> Any:
    """The validated answer (instructor's class) to ``create(**kwargs)``, re-asking up to ``max_reasks``
    times; every completion received goes into ``completions`` (for the call's usage), whatever happens.

    Raises what ``create`` raises, :class:`~instructor.core.IncompleteOutputException` for an answer cut
    at its token limit, and :class:`ValidationFailed` once no answer validated.
    """
    kwargs = plan.request(kwargs)
    timeout = kwargs.get("timeout")
    start = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        completion = await create(**kwargs)
        completions.append(completion)
        try:
            parsed = plan.handlers.response_parser(
                response=completion, response_model=plan.model, validation_context=None, strict=True, stream=False
            )
        except REASKABLE as exc:
            out_of_time = isinstance(timeout, (int, float)) and time.monotonic() - start >= timeout
            if attempt > max_reasks or out_of_time:
                raise ValidationFailed(exc, completion, attempt) from exc
            kwargs = plan.handlers.reask_handler(kwargs=kwargs, response=completion, exception=exc)
            continue
        return parsed


def total_usage(model: str, completions: list[Any], batched: bool) -> Usage:
    """What ``completions`` billed together."""
    prompt = sum(int(getattr(c.usage, "prompt_tokens", None) or 0) for c in completions if c.usage)
    completion = sum(int(getattr(c.usage, "completion_tokens", None) or 0) for c in completions if c.usage)
    if not any(c.usage for c in completions):
        return Usage()
    return Usage.of(model, _Tokens(prompt, completion), batched)


@dataclass
class _Tokens:
    prompt_tokens: int
    completion_tokens: int
