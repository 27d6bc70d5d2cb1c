"""Per-model state of the LLM layer: HTTP clients, the create functions that use them, limits."""

from __future__ import annotations

import asyncio
import functools
import itertools
import ssl
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx2
import openai

from .chat import chat_create
from .limits import RateLimiter
from .secrets import key_for
from .specs import ModelSpec

if TYPE_CHECKING:
    from .batch import BatchCollector
    from .models import LLMSettings

#: Connections per HTTP client. httpcore's pool does work linear in its size for every
#: request, so many concurrent requests go through several small pools instead of one.
POOL_SIZE = 16


class Endpoint:
    """Per-model state: HTTP clients, instructor wrappers, concurrency and rate limits."""

    def __init__(
        self,
        spec: ModelSpec,
        base_url: str | None,
        model: str,
        identity: str,
        settings: LLMSettings,
        counted: Callable[[], None],
        collector: Callable[..., BatchCollector],
        slots: int | None = None,
    ) -> None:
        """``counted`` is told of every chat request; ``collector`` makes the batch collector (batch mode)."""
        self.spec, self.model, self.identity = spec, model, identity
        key = key_for(spec)
        s = settings
        shards = 1 if s.batch else max(1, -(-s.max_connections // POOL_SIZE))
        limits = httpx2.Limits(max_connections=-(-s.max_connections // shards) + 2)
        # a query in the endpoint's URL (?api-version=, ?key=) goes with every request, not into the path
        base_url, _, query = (base_url or "").partition("?")
        self.batch = collector(spec, model, identity, base_url, query, key, limits) if s.batch else None
        self.clients = [
            openai.AsyncOpenAI(
                base_url=base_url or None,
                default_query=dict(urllib.parse.parse_qsl(query)) or None,
                api_key=key or "no-key",
                max_retries=0,
                timeout=s.timeout,
                http_client=httpx2.AsyncClient(
                    timeout=httpx2.Timeout(s.timeout),
                    limits=limits,
                    transport=transport(spec, limits),
                    verify=tls_context(),
                ),
            )
            for _ in range(shards)
        ]
        # chat completions skip openai's parameter transform and, in batch mode, go to the collector
        self.creates = [chat_create(c, counted, self.batch) for c in self.clients]
        self._next = itertools.cycle(range(shards))
        # the local server decodes `slots` requests at once: queue the rest here, where waiting does
        # not count against the HTTP timeout, instead of in the server, where it would
        self.semaphore = asyncio.Semaphore(min(slots, s.max_connections) if slots else s.max_connections)
        if s.batch:  # requests wait for their batch, not for a connection; a batch has its own quota
            self.semaphore = asyncio.Semaphore(1 << 30)
        limited = not s.batch
        self.rpm = RateLimiter(s.requests_per_minute) if s.requests_per_minute and limited else None
        self.tpm = RateLimiter(s.tokens_per_minute) if s.tokens_per_minute and limited else None

    async def follow_local_server(self) -> None:
        """A reused local server stops when the process that started it exits; the shared
        handle then starts (or finds) another, possibly on a new port: point our clients at it."""
        from .local import get_local_server

        server = await asyncio.to_thread(get_local_server)
        for client in self.clients:
            if str(client.base_url).rstrip("/") != server.base_url:
                client.base_url = server.base_url

    def pick(self) -> tuple[openai.AsyncOpenAI, Any]:
        """A client and its chat create (:func:`~.chat.chat_create`), in turn across shards."""
        i = next(self._next)
        return self.clients[i], self.creates[i]


def transport(spec: ModelSpec, limits: httpx2.Limits) -> httpx2.AsyncBaseTransport | None:
    if spec.provider == "local":
        from .local.transport import GrammarTransport

        return GrammarTransport(limits)
    return None


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context (httpx's default: the certifi store, ``SSL_CERT_FILE``) for every client of the
    process: loading the certificate store is most of what building a client costs, and an endpoint
    builds one client per shard (four at the default concurrency)."""
    return httpx2.create_ssl_context()
