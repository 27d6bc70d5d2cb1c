"""One client for every LLM call of the project, over real HTTP to OpenAI-compatible servers.

Each call goes: cache → cost limit → per-model concurrency and rate limits → HTTP with
retries (429, 5xx, timeouts, dropped connections; exponential backoff with jitter, or the
server's ``Retry-After``) → structured parsing by ``instructor`` with a bounded number of
re-asks. Whatever happens, a call returns an :class:`LLMResult`: a value, or an error with
the raw text the model gave, so a run never dies of one bad answer. The exception: errors that
cannot succeed on retry (a wrong key, an unknown model, an unreachable endpoint; see
:mod:`.fatal`) raise :class:`~.fatal.FatalError` once they repeat, so the caller stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import sqlite3
import time
import urllib.parse
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import httpx2
import openai
from instructor.core import IncompleteOutputException, InstructorRetryException
from instructor.v2.core.function_calls import response_schema
from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from ..paths import cache_root
from ..write_errors import cannot_write
from .accounting import RunStats, Transcript, Usage
from .batch import BatchFailure, BatchProgress
from .cache import ResponseCache, cache_key
from .chat import chat_create, instructed
from .fatal import Breaker, FatalError, diagnose
from .limits import RateLimiter
from .retry import backoff, backoff_wait, transient_status
from .secrets import key_for, redact
from .specs import ModelSpec, parse_model_spec
from .waiting import slot, waited

log = logging.getLogger(__name__)
# instructor logs every failed attempt at ERROR; we retry those and report failures ourselves.
logging.getLogger("instructor").setLevel(logging.CRITICAL)


def _memoize_async_validator_check() -> None:
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


_memoize_async_validator_check()

T = TypeVar("T")
Messages = Sequence[dict[str, Any]]


class LLMSettings(BaseModel):
    """How calls are made; none of this changes what a model answers, so none of it is cached on."""

    max_connections: int = 16  # concurrent requests per model
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    timeout: float = 60.0  # seconds per request
    max_attempts: int = 6  # HTTP attempts per call (transient errors only)
    max_backoff: float = 60.0  # longest wait between attempts, in seconds
    max_reasks: int = 2  # re-asks after an answer fails validation
    max_answer_tokens: int = 4096  # an answer cut at N tokens is asked once more with max(2N, 1024) up to this
    cache: bool = True
    cache_path: Path | None = None  # default: <CC_CACHE_DIR>/responses.sqlite
    cost_limit: float | None = None  # USD; no new calls once spent
    temperature: float = 0.0
    # Batch API (see .batch): requests missing from the cache go into batch files
    batch: bool = False
    batch_fallback: Literal["batch", "direct"] = "batch"  # where re-asks go
    batch_idle: float = 1.0  # seconds without a new request before a batch file is sent
    batch_poll: float = 5.0  # first wait between polls of a batch (grows 1.5x a poll)
    batch_poll_max: float = 300.0
    batch_max_requests: int = 50_000  # per batch file (OpenAI's limit)
    batch_max_bytes: int = 200 * 1024 * 1024

    def width(self, concurrency: int, n: int) -> int:
        """How many of ``n`` items to work on at once: ``concurrency``, but in batch mode all of them,
        so that their requests wait for one batch together instead of trickling into many small ones."""
        return max(concurrency, n) if self.batch else concurrency


@dataclass
class LLMResult(Generic[T]):
    value: T | None
    error: str | None = None
    raw: str | None = None  # the model's text (tool arguments for structured calls)
    cache_hit: bool = False
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    attempts: int = 0
    truncated_at: int | None = None  # the answer was cut at this many tokens (finish_reason "length")

    @property
    def ok(self) -> bool:
        return self.error is None


#: Connections per HTTP client. httpcore's pool does work linear in its size for every
#: request, so many concurrent requests go through several small pools instead of one.
_POOL_SIZE = 16


class _Endpoint:
    """Per-model state: HTTP clients, instructor wrappers, concurrency and rate limits."""

    def __init__(
        self, spec: ModelSpec, base_url: str | None, model: str, identity: str, llm: LLM, slots: int | None = None
    ) -> None:
        self.spec, self.model, self.identity = spec, model, identity
        key = key_for(spec)
        s = llm.settings
        shards = 1 if s.batch else max(1, -(-s.max_connections // _POOL_SIZE))
        limits = httpx2.Limits(max_connections=-(-s.max_connections // shards) + 2)
        # a query in the endpoint's URL (?api-version=, ?key=) goes with every request, not into the path
        base_url, _, query = (base_url or "").partition("?")
        self.batch = llm._batch_collector(spec, model, identity, base_url, query, key, limits) if s.batch else None
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
                    transport=_transport(spec, limits),
                ),
            )
            for _ in range(shards)
        ]
        # chat completions skip openai's parameter transform and, in batch mode, go to the collector
        self.creates = [chat_create(c, llm._count_request, self.batch) for c in self.clients]
        self.wrapped = [instructed(c, spec.mode, create) for c, create in zip(self.clients, self.creates, strict=True)]
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

    def pick(self) -> tuple[openai.AsyncOpenAI, Any, Any]:
        """A client, its structured (instructor) create and its plain create, in turn across shards."""
        i = next(self._next)
        return self.clients[i], self.wrapped[i], self.creates[i]


class LLM:
    """The project's LLM layer; use one per run (``async with LLM(settings) as llm``)."""

    def __init__(
        self,
        settings: LLMSettings | None = None,
        transcript: str | Path | None = None,
        batches: str | Path | None = None,
    ) -> None:
        """``batches``: the batch journal (batch mode; default: ``batches.jsonl`` in the cache directory)."""
        self.settings = settings or LLMSettings()
        self.batches = batches
        self.batch_progress = BatchProgress()
        self.on_batch: Any = None  # called with :attr:`batch_progress` whenever a batch changes
        self._batch_journal: Any = None
        self.stats = RunStats()
        self.cache = _open_cache(self.settings.cache_path) if self.settings.cache else None
        self.transcript = Transcript(transcript) if transcript else None
        self.cost_limit_reached = False
        self.breaker = Breaker()  # stops all calls on errors that cannot succeed on retry
        #: (reliab) set when the transcript cannot be written (full disk, file-size limit, read-only,
        #: I/O error): no new request is sent from then on, answers in flight are still handed back
        #: (their callers journal them), and the run stops resumable (evaluation.asking.drive)
        self.write_error: OSError | None = None
        self._endpoints: dict[str, _Endpoint] = {}
        self._endpoint_lock: asyncio.Lock | None = None

    async def __aenter__(self) -> LLM:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        if self.write_error is not None and exc[0] is None:  # (reliab) the command stops as on a full disk
            raise self.write_error

    async def aclose(self) -> None:
        for endpoint in self._endpoints.values():
            if endpoint.batch is not None:
                await endpoint.batch.aclose()
            for client in endpoint.clients:
                await client.close()
        self._endpoints.clear()
        if self.cache is not None:
            self.cache.record_run()

    # ------------------------------------------------------------------------ public API
    async def structured(
        self, model: str | ModelSpec, messages: Messages, response_model: type[T], **params: Any
    ) -> LLMResult[T]:
        """A pydantic-validated answer; on failure, the error and the model's raw text."""
        return await self._call(model, list(messages), response_model, params)

    async def text(self, model: str | ModelSpec, messages: Messages, **params: Any) -> LLMResult[str]:
        """A free-text answer."""
        return await self._call(model, list(messages), None, params)

    async def embed(self, model: str | ModelSpec, texts: Sequence[str]) -> list[list[float]]:
        """Embedding vectors (cached per text); raises once retries are exhausted."""
        from .embed import embed_texts

        return await embed_texts(self, model, texts)

    # ----------------------------------------------------------------------- internals
    def _batch_collector(
        self, spec: ModelSpec, model: str, identity: str, base_url: str, query: str, key: str | None, limits: Any
    ) -> Any:
        from .batch import BatchCollector, BatchJournal, default_journal

        if self._batch_journal is None:
            self._batch_journal = BatchJournal(self.batches or default_journal())
        api = openai.AsyncOpenAI(
            base_url=base_url or None,
            default_query=dict(urllib.parse.parse_qsl(query)) or None,
            api_key=key or "no-key",
            max_retries=0,
            timeout=self.settings.timeout,
            http_client=httpx2.AsyncClient(timeout=httpx2.Timeout(self.settings.timeout), limits=limits),
        )
        return BatchCollector(self, spec, model, identity, api, self._batch_journal)

    def _count_request(self) -> None:
        """One chat completion request sent (or batched): into the run's and the call's counts."""
        self.stats.calls += 1
        ledger = _LEDGER.get()
        if ledger is not None:
            ledger.requests += 1

    def _spend(self, usage: Usage) -> None:
        """Tokens a response billed: into the run's totals and the current call's transcript line."""
        self.stats.add(usage)
        ledger = _LEDGER.get()
        if ledger is not None:
            ledger.add(usage)

    async def endpoint(self, model: str | ModelSpec) -> _Endpoint:
        spec = parse_model_spec(model) if isinstance(model, str) else model
        found = self._endpoints.get(spec.text)
        if found is not None:
            return found
        if self._endpoint_lock is None:
            self._endpoint_lock = asyncio.Lock()
        async with self._endpoint_lock:
            if spec.text not in self._endpoints:
                self._endpoints[spec.text] = await self._make_endpoint(spec)
        return self._endpoints[spec.text]

    async def _make_endpoint(self, spec: ModelSpec) -> _Endpoint:
        if spec.provider != "local":
            return _Endpoint(spec, spec.base_url, spec.model, spec.identity(), self)
        from .local import get_local_server, install_exit_handlers

        install_exit_handlers()  # signal handlers can only be set here, on the loop's (main) thread
        server = await asyncio.to_thread(get_local_server)
        identity = f"local|{server.weights_sha256}"
        return _Endpoint(spec, server.base_url, server.model_name, identity, self, slots=server.parallel)

    async def _call(
        self,
        model: str | ModelSpec,
        messages: list[dict[str, Any]],
        response_model: type | None,
        params: dict[str, Any],
    ) -> LLMResult:
        start = time.perf_counter()
        self.breaker.check()
        if self.write_error is not None:  # (reliab) nothing more is sent once the run's files cannot be written
            self.stats.failures += 1
            return LLMResult(None, error=f"not asked: {cannot_write(self.write_error)}")
        ledger = _Ledger()
        token = _LEDGER.set(ledger)
        ep: _Endpoint | None = None
        try:
            try:
                ep = await self.endpoint(model)
            except Exception as exc:  # a missing key, an unusable spec, a local server that won't start
                failed = LLMResult(None, error=redact(str(exc)))
                self._finish(None, messages, response_model, params, failed, start)
                reason = self.breaker.trip(failed.error or type(exc).__name__)  # every call would fail the same way
                raise FatalError(reason) from None
            result = await self._cached_or_asked(ep, messages, response_model, params, start)
        except asyncio.CancelledError:  # a forecast timeout: what was sent and billed still goes on record
            if ledger.requests:
                with contextlib.suppress(OSError):  # a cancelled call must end cancelled, whatever the disk says
                    self._finish(
                        ep, messages, response_model, params, LLMResult(None, error="cancelled"), start, ledger
                    )
            raise
        finally:
            _LEDGER.reset(token)
        result = self._finish(ep, messages, response_model, params, result, start, ledger)
        self.breaker.check()  # recorded above; now stop the caller if this call tripped the breaker
        return result

    async def _cached_or_asked(
        self,
        ep: _Endpoint,
        messages: list[dict[str, Any]],
        response_model: type | None,
        params: dict[str, Any],
        start: float,
    ) -> LLMResult:
        params = {"temperature": self.settings.temperature, **params}
        schema = _schema(response_model) if response_model is not None else "text"
        key = cache_key(ep.identity, messages, params, schema)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    value = response_model.model_validate(hit["value"]) if response_model is not None else hit["value"]
                except ValidationError:  # the model's validators changed since: ask again
                    value = None
                if value is not None:
                    self.stats.cache_hits += 1
                    usage = Usage(**hit.get("usage", {}), cost=0.0)  # served from disk: nothing spent
                    return LLMResult(value, raw=hit.get("raw"), cache_hit=True, usage=usage)
        result = await self._request(ep, messages, response_model, params)
        if result.ok and self.cache is not None:
            value = result.value.model_dump(mode="json") if isinstance(result.value, BaseModel) else result.value
            usage = {"prompt_tokens": result.usage.prompt_tokens, "completion_tokens": result.usage.completion_tokens}
            self.cache.put(key, ep.identity, {"value": value, "raw": result.raw, "usage": usage})
        return result

    async def _request(
        self, ep: _Endpoint, messages: list[dict[str, Any]], response_model: type | None, params: dict[str, Any]
    ) -> LLMResult:
        attempts = 0
        async with slot(ep.semaphore):  # queued: not counted against a forecast's timeout
            # Checked once a slot is free, so calls queued behind the limit are not made either.
            self.breaker.check()
            refused = self._over_budget()
            if refused is not None:
                return refused
            # the policy of :meth:`retrying`, as a plain loop: tenacity's machinery cost a tenth of
            # the client's CPU per call when tens of thousands of calls wait for a batch
            while True:
                attempts += 1
                try:
                    result = await self._attempt(ep, messages, response_model, params, attempts)
                    break
                except Exception as exc:
                    if self._retryable(exc, ep.spec) and attempts < self.settings.max_attempts:
                        self._count_retry(exc, attempts)
                        await asyncio.sleep(backoff(exc, attempts, self.settings.max_backoff))
                        continue
                    # retries exhausted, or an error that retrying cannot fix
                    diagnosis = diagnose(exc, ep.spec)
                    return LLMResult(None, error=diagnosis.sentence if diagnosis else _describe(exc), attempts=attempts)
        self.breaker.success(ep.spec)
        result.attempts = attempts
        return result

    async def _attempt(
        self,
        ep: _Endpoint,
        messages: list[dict[str, Any]],
        response_model: type | None,
        params: dict[str, Any],
        attempt: int,
    ) -> LLMResult:
        if attempt > 1 and ep.spec.provider == "local":
            await ep.follow_local_server()
        if ep.rpm:
            await waited(ep.rpm.acquire())
        estimate = _estimate_tokens(messages, params)
        if ep.tpm:
            await waited(ep.tpm.acquire(estimate))
        result = await self._once(ep, messages, response_model, params)
        if result.truncated_at is not None:
            result = await self._ask_longer(ep, messages, response_model, params, result)
        if ep.tpm:
            ep.tpm.settle(estimate, result.usage.prompt_tokens + result.usage.completion_tokens)
        return result

    async def _once(
        self, ep: _Endpoint, messages: list[dict[str, Any]], response_model: type | None, params: dict[str, Any]
    ) -> LLMResult:
        _, wrapped, create = ep.pick()
        if response_model is None:
            completion = await create(model=ep.model, messages=messages, **params)
            usage = Usage.of(ep.model, completion.usage, _batched())
            self._spend(usage)
            if completion.choices[0].finish_reason == "length":
                return _cut(completion, usage, params)
            return LLMResult(
                completion.choices[0].message.content or "", raw=completion.choices[0].message.content, usage=usage
            )
        try:
            parsed, completion = await wrapped.chat.completions.create_with_completion(
                model=ep.model,
                messages=messages,
                response_model=_wrapped(response_model),
                max_retries=self.settings.max_reasks,
                **params,
            )
        except IncompleteOutputException as exc:
            usage = Usage.of(ep.model, getattr(exc.last_completion, "usage", None))
            self._spend(usage)
            return _cut(exc.last_completion, usage, params)
        except InstructorRetryException as exc:
            cause = _root_cause(exc)
            usage = Usage.of(ep.model, getattr(exc, "total_usage", None), _batched())
            self._spend(usage)
            if isinstance(cause, IncompleteOutputException):
                return _cut(cause.last_completion, usage, params)
            if cause is not None and _transient(cause):
                raise cause from cause.__cause__  # keep what caused it (a refused connection...)
            if cause is not None and not isinstance(cause, (ValidationError, json.JSONDecodeError, ValueError)):
                raise cause from cause.__cause__  # keep what caused it (a refused connection...)
            raw = _raw_text(getattr(exc, "last_completion", None))
            attempts = getattr(exc, "n_attempts", 1)
            error = f"answer failed validation after {attempts} attempt(s): {_short(cause or exc)}"
            return LLMResult(None, error=error, raw=raw, usage=usage)
        usage = Usage.of(ep.model, getattr(parsed, "_total_usage", None) or completion.usage, _batched())
        self._spend(usage)
        # Hand back the caller's own class, exactly as a cache hit would.
        value = response_model.model_validate(parsed.model_dump())
        return LLMResult(value, raw=_raw_text(completion), usage=usage)

    async def _ask_longer(
        self,
        ep: _Endpoint,
        messages: list[dict[str, Any]],
        response_model: type | None,
        params: dict[str, Any],
        cut: LLMResult,
    ) -> LLMResult:
        """An answer cut at the token limit, asked once more with twice the room (at least 1024 tokens, at
        most ``max_answer_tokens``); cut again, or no more room to give: failed, saying where it was cut."""
        limit = cut.truncated_at or 0
        room = min(max(2 * limit, 1024), self.settings.max_answer_tokens)
        if room > limit:
            key = "max_completion_tokens" if "max_completion_tokens" in params else "max_tokens"
            log.info("answer cut at %d tokens: asking again with %s=%d", limit, key, room)
            again = await self._once(ep, messages, response_model, {**params, key: room})
            if again.truncated_at is None:
                return again
            cut, limit = again, again.truncated_at or room
        return LLMResult(None, error=f"answer truncated at {limit} tokens", raw=cut.raw, usage=cut.usage)

    def retrying(self, spec: ModelSpec | None = None) -> AsyncRetrying:
        """Retries of transient errors (429, 5xx, timeouts), with the server's hint or backoff.

        With ``spec``, every failed attempt is shown to the breaker, which ends the retries of an
        endpoint that cannot be reached at all.
        """

        return AsyncRetrying(
            stop=stop_after_attempt(self.settings.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda exc: self._retryable(exc, spec)),
            reraise=True,
            before_sleep=self._before_retry,
        )

    def _retryable(self, exc: BaseException, spec: ModelSpec | None) -> bool:
        """Whether a failed attempt is worth another; the breaker sees every failure of ``spec``."""
        if spec is not None:
            self.breaker.failure(exc, spec)
        return _transient(exc) and self.breaker.reason is None

    def _over_budget(self) -> LLMResult | None:
        limit = self.settings.cost_limit
        if limit is None or self.stats.cost < limit:
            return None
        if not self.cost_limit_reached:
            log.warning("cost limit of $%.4f reached: no new LLM calls", limit)
        self.cost_limit_reached = True
        return LLMResult(None, error=f"cost limit of ${limit:g} reached; call not made")

    def _wait(self, state: RetryCallState) -> float:
        return backoff_wait(state, self.settings.max_backoff)

    def _before_retry(self, state: RetryCallState) -> None:
        self._count_retry(state.outcome.exception() if state.outcome else None, state.attempt_number)

    def _count_retry(self, exc: BaseException | None, attempt: int) -> None:
        self.stats.retries += 1
        log.info("retrying after %s (attempt %d)", _describe(exc), attempt)

    def _finish(
        self,
        ep: _Endpoint | None,
        messages: list[dict[str, Any]],
        response_model: type | None,
        params: dict[str, Any],
        result: LLMResult,
        start: float,
        ledger: _Ledger | None = None,
    ) -> LLMResult:
        result.latency = time.perf_counter() - start
        if ledger is not None and not result.cache_hit:
            # every HTTP attempt of the call (retries, re-asks, instructor's own retries) and all it billed
            result.attempts, result.usage = ledger.requests, ledger.usage
        if not result.ok:
            self.stats.failures += 1
        if self.transcript is not None:
            try:
                self._transcribe(ep, messages, response_model, params, result)
            except OSError as exc:  # (reliab) the answer is paid for: hand it back, send nothing more
                if self.write_error is None:
                    log.warning("%s; no more LLM calls are made", cannot_write(exc))
                self.write_error = self.write_error or exc
        return result

    def _transcribe(
        self,
        ep: _Endpoint | None,
        messages: list[dict[str, Any]],
        response_model: type | None,
        params: dict[str, Any],
        result: LLMResult,
    ) -> None:
        """The call's line in the transcript (raises OSError when it cannot be written)."""
        if self.transcript is not None:
            value = result.value.model_dump(mode="json") if isinstance(result.value, BaseModel) else result.value
            self.transcript.write(
                {
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "model": ep.spec.public if ep else None,
                    "endpoint_model": ep.model if ep else None,
                    "messages": messages,
                    "params": params,
                    "response_model": response_model.__name__ if response_model else None,
                    "response": result.raw,
                    "parsed": value,
                    "usage": {
                        "prompt_tokens": result.usage.prompt_tokens,
                        "completion_tokens": result.usage.completion_tokens,
                        "cost": result.usage.cost,
                    },
                    "latency_s": round(result.latency, 4),
                    "cache_hit": result.cache_hit,
                    "attempts": result.attempts,
                    "error": result.error,
                }
            )


def _transport(spec: ModelSpec, limits: httpx2.Limits) -> httpx2.AsyncBaseTransport | None:
    if spec.provider == "local":
        from .local.transport import GrammarTransport

        return GrammarTransport(limits)
    return None


def _open_cache(path: Path | None) -> ResponseCache | None:
    """The response cache, or none (with a warning) if it cannot be opened at all: it only saves time."""
    try:
        return ResponseCache(path)
    except (sqlite3.Error, OSError) as exc:
        where = path or cache_root() / ResponseCache.FILENAME  # (reliab) cache_dir() would raise again here
        log.warning("cannot open the response cache %s (%s); running without it", where, exc)
        return None


@dataclass
class _Ledger:
    """What one call sent and was billed, across all its HTTP attempts (kept in a context variable,
    which the HTTP client's request hook and the token accounting of each attempt see)."""

    requests: int = 0
    batched: int = 0  # requests answered by a batch
    usage: Usage = field(default_factory=Usage)

    def add(self, usage: Usage) -> None:
        u = self.usage
        cost = None if u.cost is None and usage.cost is None else (u.cost or 0.0) + (usage.cost or 0.0)
        self.usage = Usage(u.prompt_tokens + usage.prompt_tokens, u.completion_tokens + usage.completion_tokens, cost)


_LEDGER: ContextVar[_Ledger | None] = ContextVar("llm_call_ledger", default=None)


def _batched() -> bool:
    """Whether the current call was answered by batches only (it is then billed at batch prices)."""
    ledger = _LEDGER.get()
    return ledger is not None and 0 < ledger.batched == ledger.requests


@cache
def _wrapped(model: type[BaseModel]) -> type[BaseModel]:
    """instructor's wrapper class for ``model``, built once (instructor skips models already wrapped)."""
    return response_schema(model)


@cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


# --------------------------------------------------------------------------- error helpers
def _transient(exc: BaseException) -> bool:
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, openai.APIResponseValidationError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return transient_status(exc.status_code)
    return isinstance(exc, (json.JSONDecodeError, httpx2.TransportError))


def _root_cause(exc: BaseException) -> BaseException | None:
    cause = exc.__cause__
    while isinstance(cause, InstructorRetryException) and cause.__cause__ is not None:
        cause = cause.__cause__
    return cause


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, BatchFailure):  # its batch could not answer it (not retried): the sentence says why
        return redact(str(exc))
    if isinstance(exc, openai.APIStatusError):
        return redact(f"HTTP {exc.status_code}: {_short(exc)}")
    return redact(f"{type(exc).__name__}: {_short(exc)}")


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return redact(text if len(text) <= limit else text[: limit - 1] + "…")


def _cut(completion: Any, usage: Usage, params: dict[str, Any]) -> LLMResult:
    """An answer the server stopped at its token limit: where (the request's limit, else the tokens it
    produced) and the partial text, for :meth:`LLM._ask_longer`."""
    limit = params.get("max_completion_tokens") or params.get("max_tokens") or usage.completion_tokens
    return LLMResult(
        None,
        error=f"answer truncated at {limit} tokens",
        raw=_raw_text(completion),
        usage=usage,
        truncated_at=int(limit),
    )


def _raw_text(completion: Any) -> str | None:
    try:
        message = completion.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return None
    calls = getattr(message, "tool_calls", None)
    if calls:
        return calls[0].function.arguments
    return message.content


def _estimate_tokens(messages: list[dict[str, Any]], params: dict[str, Any]) -> float:
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return chars / 4 + float(params.get("max_tokens") or 256)
