"""Structured answers: what of ``instructor`` a call uses, and reading what a completion said."""

from __future__ import annotations

from functools import cache
from typing import Any

from instructor.core import InstructorRetryException
from instructor.v2.core.function_calls import response_schema
from pydantic import BaseModel

from .accounting import Usage
from .models import LLMResult


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


def root_cause(exc: BaseException) -> BaseException | None:
    cause = exc.__cause__
    while isinstance(cause, InstructorRetryException) and cause.__cause__ is not None:
        cause = cause.__cause__
    return cause


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
