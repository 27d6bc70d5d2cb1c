"""One client for every LLM call of the project, over real HTTP to OpenAI-compatible servers.

Each call goes: cache → cost limit → per-model concurrency and rate limits → HTTP with
retries (429, 5xx, timeouts, dropped connections; exponential backoff with jitter, or the
server's ``Retry-After``) → structured parsing and validation with a bounded number of re-asks
(:mod:`.structured`: what of ``instructor`` a call needs). Whatever happens, a call returns an
:class:`LLMResult`: a value, or an error with the raw text the model gave, so a run never dies of
one bad answer. The exception: errors that
cannot succeed on retry (a wrong key, an unknown model, an unreachable endpoint; see
:mod:`.fatal`) raise :class:`~.fatal.FatalError` once they repeat, so the caller stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import openai
from instructor.core import IncompleteOutputException
from pydantic import BaseModel, ValidationError

from ..paths import cache_root
from ..write_errors import cannot_write
from .accounting import RunStats, Transcript, Usage
from .batch import BatchProgress
from .cache import ResponseCache, cache_key
from .endpoint import Endpoint, tls_context
from .errors import describe, lost_in_transit, short, transient
from .fatal import Breaker, FatalError, diagnose, host_of
from .ledger import LEDGER, Ledger, batched
from .logprobs import MAX_TOP_LOGPROBS, NextToken, next_token
from .models import LLMResult, LLMSettings
from .retry import backoff, retried
from .secrets import redact
from .specs import ModelSpec, parse_model_spec
from .structured import ValidationFailed, ask_structured, cached_schema, cut, plan, raw_text, total_usage
from .waiting import slot, waited

log = logging.getLogger(__name__)
# instructor logs every failed attempt at ERROR; we retry those and report failures ourselves.
logging.getLogger("instructor").setLevel(logging.CRITICAL)


T = TypeVar("T")
Messages = Sequence[dict[str, Any]]


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
        #: set when the transcript cannot be written (full disk, file-size limit, read-only,
        #: I/O error): no new request is sent from then on, answers in flight are still handed back
        #: (their callers journal them), and the run stops resumable (evaluation.asking.drive)
        self.write_error: OSError | None = None
        self._endpoints: dict[str, Endpoint] = {}
        self._endpoint_lock: asyncio.Lock | None = None

    async def __aenter__(self) -> LLM:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        if self.write_error is not None and exc[0] is None:  # the command stops as on a full disk
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

    async def next_token(
        self, model: str | ModelSpec, messages: Messages, top_logprobs: int = MAX_TOP_LOGPROBS, **params: Any
    ) -> LLMResult[NextToken]:
        """The distribution of the answer's first token: one generated token (``max_tokens=1`` unless
        ``params`` sets a limit), its ``top_logprobs`` most likely alternatives. An endpoint that returns
        no logprobs stops the run (every call would fail the same way)."""
        limit = {} if "max_tokens" in params or "max_completion_tokens" in params else {"max_tokens": 1}
        asked = {**limit, **params, "logprobs": True, "top_logprobs": top_logprobs}
        return await self._call(model, list(messages), NextToken, asked)

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
            http_client=httpx2.AsyncClient(
                timeout=httpx2.Timeout(self.settings.timeout), limits=limits, verify=tls_context()
            ),
        )
        return BatchCollector(self, spec, model, identity, api, self._batch_journal)

    def _count_request(self) -> None:
        """One chat completion request sent (or batched): into the run's and the call's counts."""
        self.stats.calls += 1
        ledger = LEDGER.get()
        if ledger is not None:
            ledger.requests += 1

    def _spend(self, usage: Usage) -> None:
        """Tokens a response billed: into the run's totals and the current call's transcript line."""
        self.stats.add(usage)
        ledger = LEDGER.get()
        if ledger is not None:
            ledger.add(usage)

    async def endpoint(self, model: str | ModelSpec) -> Endpoint:
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

    async def _make_endpoint(self, spec: ModelSpec) -> Endpoint:
        parts = self.settings, self._count_request, self._batch_collector
        if spec.provider != "local":
            return Endpoint(spec, spec.base_url, spec.model, spec.identity(), *parts)
        from .local import get_local_server, install_exit_handlers

        install_exit_handlers()  # signal handlers can only be set here, on the loop's (main) thread
        server = await asyncio.to_thread(get_local_server)
        identity = f"local|{server.weights_sha256}"
        return Endpoint(spec, server.base_url, server.model_name, identity, *parts, slots=server.parallel)

    async def _call(
        self,
        model: str | ModelSpec,
        messages: list[dict[str, Any]],
        response_model: type | None,
        params: dict[str, Any],
    ) -> LLMResult:
        start = time.perf_counter()
        self.breaker.check()
        if self.write_error is not None:  # nothing more is sent once the run's files cannot be written
            self.stats.failures += 1
            return LLMResult(None, error=f"not asked: {cannot_write(self.write_error)}")
        ledger = Ledger()
        token = LEDGER.set(ledger)
        ep: Endpoint | None = None
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
            LEDGER.reset(token)
        result = self._finish(ep, messages, response_model, params, result, start, ledger)
        self.breaker.check()  # recorded above; now stop the caller if this call tripped the breaker
        return result

    async def _cached_or_asked(
        self,
        ep: Endpoint,
        messages: list[dict[str, Any]],
        response_model: type | None,
        params: dict[str, Any],
        start: float,
    ) -> LLMResult:
        params = {"temperature": self.settings.temperature, **params}
        schema = cached_schema(response_model) if response_model is not None else "text"
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
        self, ep: Endpoint, messages: list[dict[str, Any]], response_model: type | None, params: dict[str, Any]
    ) -> LLMResult:
        attempts = 0
        async with slot(ep.semaphore):  # queued: not counted against a forecast's timeout
            # Checked once a slot is free, so calls queued behind the limit are not made either.
            self.breaker.check()
            refused = self._over_budget()
            if refused is not None:
                return refused
            last = self.settings.max_attempts

            async def attempt(n: int) -> LLMResult:
                nonlocal attempts
                attempts = n
                return await self._attempt(ep, messages, response_model, params, n)

            try:  # the last failure is counted as it is (no retry confirms it): the breaker sees no attempt number
                result = await retried(
                    attempt, last, lambda exc, n: self._retryable(exc, ep.spec, None if n >= last else n),
                    self._pause, self._count_retry,
                )  # fmt: skip
            except Exception as exc:  # retries exhausted, or an error that retrying cannot fix
                diagnosis = diagnose(exc, ep.spec)
                return LLMResult(None, error=diagnosis.sentence if diagnosis else describe(exc), attempts=attempts)
        self.breaker.success(ep.spec)
        result.attempts = attempts
        return result

    async def _attempt(
        self,
        ep: Endpoint,
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
        self, ep: Endpoint, messages: list[dict[str, Any]], response_model: type | None, params: dict[str, Any]
    ) -> LLMResult:
        _, create = ep.pick()
        if response_model is NextToken:
            return self._next_token(ep, await create(model=ep.model, messages=messages, **params))
        if response_model is None:
            completion = await create(model=ep.model, messages=messages, **params)
            usage = Usage.of(ep.model, completion.usage, batched())
            self._spend(usage)
            if completion.choices[0].finish_reason == "length":
                return cut(completion, usage, params)
            return LLMResult(
                completion.choices[0].message.content or "", raw=completion.choices[0].message.content, usage=usage
            )
        completions: list[Any] = []
        try:
            parsed = await ask_structured(
                create,
                plan(response_model, ep.spec.mode),
                self.settings.max_reasks,
                {"model": ep.model, "messages": messages, **params},
                completions,
            )
        except IncompleteOutputException as exc:
            usage = total_usage(ep.model, completions, batched())
            self._spend(usage)
            return cut(exc.last_completion, usage, params)
        except ValidationFailed as exc:
            usage = total_usage(ep.model, completions, batched())
            self._spend(usage)
            error = f"answer failed validation after {exc.attempts} attempt(s): {short(exc.error)}"
            return LLMResult(None, error=error, raw=raw_text(exc.completion), usage=usage)
        except BaseException:
            self._spend(total_usage(ep.model, completions, batched()))  # billed before it failed
            raise
        usage = total_usage(ep.model, completions, batched())
        self._spend(usage)
        # Hand back the caller's own class, exactly as a cache hit would.
        value = response_model.model_validate(parsed.model_dump())
        completion = completions[-1]
        return LLMResult(value, raw=raw_text(completion), usage=usage)

    def _next_token(self, ep: Endpoint, completion: Any) -> LLMResult:
        """A completion's first-token distribution; none at all means the endpoint ignores ``logprobs``."""
        usage = Usage.of(ep.model, completion.usage, batched())
        self._spend(usage)
        raw = raw_text(completion)
        found = next_token(completion)
        if found is None:
            self.breaker.trip(
                f"{host_of(ep.spec)} returned no logprobs for model {ep.spec.model!r}: the logprob forecaster needs "
                "an endpoint that returns them (OpenAI's, llama.cpp's, vLLM's do); use basic:MODEL with this one"
            )
            return LLMResult(None, error="the endpoint returned no logprobs", raw=raw, usage=usage)
        return LLMResult(found, raw=raw, usage=usage)

    async def _ask_longer(
        self,
        ep: Endpoint,
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

    async def retried(
        self, call: Callable[[], Awaitable[T]], spec: ModelSpec | None = None,
        retry: Callable[[BaseException], bool] | None = None,
    ) -> T:  # fmt: skip
        """``await call()``, with transient errors (429, 5xx, timeouts) retried after the server's hint or backoff.

        With ``spec``, every failed attempt is shown to the breaker, which ends the retries of an
        endpoint that cannot be reached at all; ``retry`` replaces the test of whether an attempt is
        retried (the batch collector's, which also knows endpoints without a Batch API).
        """
        worth = retry or (lambda exc: self._retryable(exc, spec))
        return await retried(
            lambda _: call(), self.settings.max_attempts, lambda exc, _: worth(exc), self._pause, self._count_retry
        )

    def _retryable(self, exc: BaseException, spec: ModelSpec | None, attempt: int | None = None) -> bool:
        """Whether a failed attempt is worth another; the breaker sees every failure of ``spec``."""
        if spec is not None:
            self.breaker.failure(exc, spec, attempt)
        return transient(exc) and self.breaker.reason is None

    def _over_budget(self) -> LLMResult | None:
        limit = self.settings.cost_limit
        if limit is None or self.stats.cost < limit:
            return None
        if not self.cost_limit_reached:
            log.warning("cost limit of $%.4f reached: no new LLM calls", limit)
        self.cost_limit_reached = True
        return LLMResult(None, error=f"cost limit of ${limit:g} reached; call not made")

    def _pause(self, exc: BaseException | None, attempt: int) -> float:
        """Seconds before the next attempt: none after a first attempt lost in transit (timed out, dropped,
        unreadable: :func:`~.errors.lost_in_transit`), else the server's hint or jittered backoff."""
        if attempt == 1 and exc is not None and lost_in_transit(exc):
            return 0.0
        return backoff(exc, attempt, self.settings.max_backoff)

    def _count_retry(self, exc: BaseException | None, attempt: int) -> None:
        self.stats.retries += 1
        log.info("retrying after %s (attempt %d)", describe(exc), attempt)

    def _finish(
        self,
        ep: Endpoint | None,
        messages: list[dict[str, Any]],
        response_model: type | None,
        params: dict[str, Any],
        result: LLMResult,
        start: float,
        ledger: Ledger | None = None,
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
            except OSError as exc:  # the answer is paid for: hand it back, send nothing more
                if self.write_error is None:
                    log.warning("%s; no more LLM calls are made", cannot_write(exc))
                self.write_error = self.write_error or exc
        return result

    def _transcribe(
        self,
        ep: Endpoint | None,
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


def _open_cache(path: Path | None) -> ResponseCache | None:
    """The response cache, or none (with a warning) if it cannot be opened at all: it only saves time."""
    try:
        return ResponseCache(path)
    except (sqlite3.Error, OSError) as exc:
        where = path or cache_root() / ResponseCache.FILENAME  # cache_dir() would raise again here
        log.warning("cannot open the response cache %s (%s); running without it", where, exc)
        return None


def _estimate_tokens(messages: list[dict[str, Any]], params: dict[str, Any]) -> float:
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return chars / 4 + float(params.get("max_tokens") or 256)
