"""Chat completions sent through the openai client, minus its parameter transform.

``chat.completions.create`` walks every message and the whole tool schema through a type-driven
transform (key aliases, date and base64 formats) before sending. The chat request types declare
none of those, so for the plain JSON values this project sends the transform returns its input,
yet it costs about a third of the client's CPU per request: the bottleneck when tens of thousands
of requests are prepared for batch files. :func:`chat_create` sends the same body through the
same client's ``post``: same URL, headers, auth, query, timeout and response parsing.
``tests/llm/test_llm_chat.py`` checks that the bytes on the wire are those ``create`` sends.

In batch mode the same function hands the body to the endpoint's :class:`~.batch.BatchCollector`
instead: a request that will travel as a line of a batch file never builds an HTTP request of
its own, and its answer comes back as the same ``ChatCompletion`` (or the same status error).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import openai
from openai._base_client import make_request_options
from openai.types.chat import ChatCompletion

if TYPE_CHECKING:
    from .batch import BatchCollector

_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


def chat_create(
    client: openai.AsyncOpenAI, counted: Callable[[], None], batch: BatchCollector | None = None
) -> Callable[..., Awaitable[Any]]:
    """``client.chat.completions.create`` for JSON-valued parameters, without the transform;
    ``counted`` is told of every request, ``batch`` (batch mode) takes those it batches."""

    async def create(**params: Any) -> Any:
        unknown = params.keys() - parameters()
        if unknown:  # as create itself would refuse it, before any request
            raise TypeError(f"create() got an unexpected keyword argument {min(unknown)!r}")
        counted()
        if params.get("stream") or not _plain(params.get("messages")):
            # streams and non-list messages keep openai's own path (whose resources import only then)
            return await client.chat.completions.create(**params)
        options = make_request_options(
            **{k: params.pop(k) for k in _OPTIONS if k in params}, security={"bearer_auth": True}
        )
        # in create's order (messages, model, the rest alphabetically): the same bytes on the wire
        body = {k: params.pop(k) for k in ("messages", "model") if k in params}
        body.update((k, params[k]) for k in sorted(params) if not isinstance(params[k], (openai.NotGiven, openai.Omit)))
        if batch is not None and batch.takes():
            return await batch.complete(client, {**body, **options.get("extra_json", {})})
        return await client.post("/chat/completions", body=body, options=options, cast_to=ChatCompletion)

    return create


@functools.cache
def parameters() -> frozenset[str]:
    """The keyword arguments ``create`` of the installed ``openai`` takes: its request body's fields,
    ``stream`` and the request options. Read from the parameter types, not from ``create`` itself,
    whose module imports every resource of the client (a second of start-up on a busy machine)."""
    from openai.types.chat.completion_create_params import CompletionCreateParamsBase

    return frozenset(CompletionCreateParamsBase.__annotations__) | {"stream", *_OPTIONS}


def _plain(messages: Any) -> bool:
    return isinstance(messages, list) and all(type(m) is dict for m in messages)
