"""Provider Batch APIs (``/v1/files`` + ``/v1/batches``) underneath the ordinary call path.

In batch mode a chat completion request that would reach the network (a cache miss) is not sent
but parked in the endpoint's :class:`BatchCollector` (see :mod:`.chat`), which writes the parked
requests into a batch file once a file is full (the provider's limits on requests and bytes) or
once no new request arrived for a short idle window, uploads it, creates the batch, polls it with
backoff and answers every parked request with the response of its line. Everything above
(``instructor``'s validation and re-asks, the response cache, costs, the transcript) runs exactly
as for a direct call; a re-ask is simply a new request, which goes into a follow-up batch (or, with
``batch_fallback="direct"``, straight to the endpoint).

Each line's ``custom_id`` is a hash of its request body, so the same request gets the same id in
every session. Batches are journaled (``batches.jsonl``, :mod:`.batch_journal`) as soon as they
exist, before any waiting: a resumed run finds the batches that hold its requests and collects
their results (downloading them again if need be) instead of submitting them a second time. Lines a
batch did not answer
(an expired batch) are submitted again, at most :data:`RESUBMITS` times; lines it answered with an
error go to the client as that HTTP error, under the same retry policy as a direct call.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import httpx2
import openai
from openai._models import construct_type
from openai._utils._json import openapi_dumps
from openai.types.chat import ChatCompletion

from .accounting import cost_usd
from .batch_journal import (  # the journal's names are also this module's, as before the split
    BATCHES,
    FINAL,
    BatchJournal,
    default_journal,
    read_batches,
    timestamp,
    unfinished,
    update_batches,
)
from .errors import BatchFailure, describe, transient
from .fatal import diagnose, host_of
from .ledger import LEDGER
from .secrets import redact
from .specs import ModelSpec

__all__ = [
    "BATCHES",
    "CHAT_PATH",
    "FINAL",
    "GC_YOUNG",
    "NOT_RUN",
    "RESUBMITS",
    "BatchCollector",
    "BatchFailure",
    "BatchJournal",
    "BatchLimits",
    "BatchProgress",
    "default_journal",
    "read_batches",
    "relaxed_gc",
    "unfinished",
    "update_batches",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: How often a request a batch did not answer (expired, lost) is submitted again.
RESUBMITS = 2
#: Per-line error codes meaning "not run", not "failed": the request is submitted again.
NOT_RUN = frozenset({"batch_expired", "batch_cancelled"})
#: Per-line errors (no response) that a direct call would have met as a retryable HTTP status: given
#: to the client as that status, so the call is retried (in the next batch, or directly per
#: ``batch_fallback``) within its attempt budget, exactly as the same fault met directly would be.
RETRYABLE_LINE = {"server_error": 500, "internal_error": 500, "request_timeout": 504, "rate_limit_exceeded": 429}
CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class BatchLimits:
    """What one batch file may hold (OpenAI: 50,000 requests and 200 MB)."""

    max_requests: int = 50_000
    max_bytes: int = 200 * 1024 * 1024


# ----------------------------------------------------------------------------- progress
@dataclass
class BatchProgress:
    """Live counts over the batches of a run, for progress displays."""

    batches: int = 0
    requests: int = 0  # lines submitted
    in_progress: int = 0  # batches not final yet
    completed: int = 0  # lines answered
    failed: int = 0  # lines answered with an error
    expected_cost: float = 0.0
    http_requests: int = 0  # to the Files and Batch API (uploads, creations, polls, downloads)
    states: dict[str, str] = field(default_factory=dict)  # local id → state

    def text(self) -> str:
        return (
            f"{self.batches} submitted ({self.requests} requests)  in progress {self.in_progress}  "
            f"answered {self.completed}  failed {self.failed}  expected ${self.expected_cost:.4f}"
        )


# ----------------------------------------------------------------------------- collector
@dataclass
class _Parked:
    data: bytes  # the batch file line
    batch: asyncio.Future[asyncio.Task[dict[str, Any]]]  # the task of the batch it went into


class BatchCollector:
    """Collects one endpoint's chat completion requests into batches and answers them from results."""

    def __init__(
        self,
        llm: Any,
        spec: ModelSpec,
        model: str,
        identity: str,
        api: openai.AsyncOpenAI,
        journal: BatchJournal,
        limits: BatchLimits | None = None,
    ) -> None:
        s = llm.settings
        self.llm, self.spec, self.model, self.identity, self.api, self.journal = (
            llm,
            spec,
            model,
            identity,
            api,
            journal,
        )
        self.limits = limits or BatchLimits(s.batch_max_requests, s.batch_max_bytes)
        self.idle, self.poll, self.poll_max = s.batch_idle, s.batch_poll, s.batch_poll_max
        self.fallback = s.batch_fallback
        self.progress: BatchProgress = llm.batch_progress
        self._parked: dict[str, _Parked] = {}
        self._parked_bytes = 0
        self._last_arrival = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._active: dict[str, asyncio.Task[dict[str, Any]]] = {}  # custom id → batch answering it now
        self._tasks: dict[str, asyncio.Task[dict[str, Any]]] = {}  # local id → its task (this session)
        # requests of earlier sessions: custom id → the latest journaled batch holding it
        self._earlier: dict[str, str] = {}
        self._earlier_tasks: set[asyncio.Task[dict[str, Any]]] = set()
        for record in journal.records.values():
            if record.get("identity") == identity and (record.get("batch_id") or record.get("file_id")):
                for cid in record.get("custom_ids", ()):
                    self._earlier[cid] = record["id"]
                self._count(record)
        self._closed = False
        relaxed_gc(True)

    # ---- asking -----------------------------------------------------------------------------
    def takes(self) -> bool:
        """Whether the current request goes into a batch: all do but, with ``batch_fallback="direct"``,
        a call's second and later requests (re-asks, retries), which go straight to the endpoint."""
        ledger = LEDGER.get()
        return not (self.fallback == "direct" and ledger is not None and ledger.requests > 1)

    async def complete(self, client: openai.AsyncOpenAI, body: dict[str, Any]) -> ChatCompletion:
        """The chat completion answering ``body`` (the JSON a direct request would send), from its
        batch; an error line raises the status error the same answer would raise when sent directly."""
        status, data = await self.ask(openapi_dumps(body))
        if (ledger := LEDGER.get()) is not None:
            ledger.batched += 1
        if status < 300:
            try:
                return ChatCompletion.model_validate_json(data)
            except ValueError:  # a provider's extension the model rejects: openai's lenient path
                return cast(ChatCompletion, construct_type(type_=ChatCompletion, value=json.loads(data)))
        request = httpx2.Request("POST", client.base_url.join("chat/completions"))
        response = httpx2.Response(status, headers={"content-type": "application/json"}, content=data, request=request)
        error = client._make_status_error_from_response(response)
        error.from_batch = True  # type: ignore[attr-defined]  # (reliab) a batch's first answers come all at once
        raise error

    async def ask(self, body: bytes) -> tuple[int, bytes]:
        """The HTTP status and body answering the chat completion request ``body``."""
        cid = "cc-" + hashlib.sha256(body).hexdigest()[:32]
        reason = "not answered"
        for _ in range(RESUBMITS + 1):
            task = self._active.get(cid)
            if task is None:
                local = self._earlier.pop(cid, None)
                task = self._resume(local) if local else await self._park(cid, body)
                self._active[cid] = task
            try:
                outcomes = await asyncio.shield(task)
            finally:
                if self._active.get(cid) is task:
                    del self._active[cid]
            outcome = outcomes.get(cid)
            if isinstance(outcome, tuple):
                return outcome
            if isinstance(outcome, BatchFailure) and (task not in self._earlier_tasks or self.llm.breaker.reason):
                raise outcome
            # an earlier session's failure is what this session was started to retry: submit it again
            reason = str(outcome or reason)  # not run (an expired batch): into a new batch
        raise BatchFailure(f"no batch answered this request after {RESUBMITS + 1} submissions ({reason})")

    async def _park(self, cid: str, body: bytes) -> asyncio.Task[dict[str, Any]]:
        parked = self._parked.get(cid)
        if parked is None:
            data = b'{"custom_id":"%s","method":"POST","url":"%s","body":%s}\n' % (
                cid.encode(),
                CHAT_PATH.encode(),
                body,
            )
            if len(data) > self.limits.max_bytes:
                raise BatchFailure(
                    f"the request ({len(data)} bytes) is larger than a batch file may be ({self.limits.max_bytes})"
                )
            if len(self._parked) >= self.limits.max_requests or self._parked_bytes + len(data) > self.limits.max_bytes:
                self._flush()
            parked = _Parked(data, asyncio.get_running_loop().create_future())
            self._parked[cid] = parked
            self._parked_bytes += len(data)
            self._last_arrival = time.monotonic()
            if self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(self.idle, self._on_idle)
        return await asyncio.shield(parked.batch)

    def _on_idle(self) -> None:
        self._timer = None
        quiet = time.monotonic() - self._last_arrival
        if quiet >= self.idle * 0.999:
            self._flush()
        elif self._parked:
            self._timer = asyncio.get_running_loop().call_later(self.idle - quiet, self._on_idle)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        parked, self._parked, self._parked_bytes = self._parked, {}, 0
        if not parked:
            return
        data = b"".join(p.data for p in parked.values())
        local = "ccb-" + hashlib.sha256(data).hexdigest()[:16]
        task = asyncio.ensure_future(self._submit(local, list(parked), data))
        self._tasks[local] = task
        for p in parked.values():
            p.batch.set_result(task)

    def _resume(self, local: str) -> asyncio.Task[dict[str, Any]]:
        task = self._tasks.get(local)
        if task is None:
            task = self._tasks[local] = asyncio.ensure_future(self._collect(local))
            self._earlier_tasks.add(task)
        return task

    # ---- one batch --------------------------------------------------------------------------
    async def _submit(self, local: str, cids: list[str], data: bytes) -> dict[str, Any]:
        expected = _expected_cost(self.model, data)
        record = self.journal.write(
            local,
            identity=self.identity,
            endpoint=self.spec.public,
            model=self.model,
            state="preparing",
            requests=len(cids),
            bytes=len(data),
            expected_cost=expected,
            created=timestamp(),
            custom_ids=cids,
        )
        self._count(record)
        try:
            file = await self._api(
                "upload", lambda: self.api.files.create(file=(f"{local}.jsonl", data), purpose="batch")
            )
            self._note(local, state="uploaded", file_id=file.id)
            batch = await self._api(
                "create",
                lambda: self.api.batches.create(
                    input_file_id=file.id,
                    endpoint=CHAT_PATH,
                    completion_window="24h",
                    metadata={"cc_batch": local},
                ),
            )
        except BatchFailure as exc:
            self._note(local, state="failed", error=str(exc), collected=True)
            return dict.fromkeys(cids, exc)
        self._note(local, state=batch.status, batch_id=batch.id)
        log.info("submitted batch %s (%s): %d request(s), %d bytes", batch.id, local, len(cids), len(data))
        return await self._collect(local)

    async def _collect(self, local: str) -> dict[str, Any]:
        """Wait for the batch to end, then each custom id's outcome: ``(status, body)``, a
        :class:`BatchFailure`, or a string (not run: submit again)."""
        record = self.journal.records[local]
        cids = record.get("custom_ids", [])
        try:
            batch_id = record.get("batch_id") or await self._find(record)
            if batch_id is None:  # uploaded but never created: nothing was run
                return dict.fromkeys(cids, "its batch was never created")
            batch = await self._wait(local, batch_id)
            outcomes = await self._results(local, batch, cids)
        except BatchFailure as exc:
            self._note(local, error=str(exc))
            return dict.fromkeys(cids, exc)
        return outcomes

    async def _find(self, record: dict[str, Any]) -> str | None:
        """The batch an earlier session created from this file but was stopped before journaling."""
        with contextlib.suppress(openai.APIError, httpx2.HTTPError):
            self.progress.http_requests += 1
            page = await self.api.batches.list(limit=100)
            for batch in page.data:
                if batch.input_file_id == record.get("file_id"):
                    self._note(record["id"], state=batch.status, batch_id=batch.id)
                    return batch.id
        return None

    async def _wait(self, local: str, batch_id: str) -> Any:
        wait, seen = self.poll, None
        while True:
            batch = await self._api("poll", lambda: self.api.batches.retrieve(batch_id))
            counts = batch.request_counts.model_dump() if batch.request_counts else None
            if (batch.status, counts) != seen:
                seen = (batch.status, counts)
                self._note(local, state=batch.status, counts=counts)
            if batch.status in FINAL:
                return batch
            await asyncio.sleep(wait)
            wait = min(wait * 1.5, self.poll_max)

    async def _results(self, local: str, batch: Any, cids: list[str]) -> dict[str, Any]:
        outcomes: dict[str, Any] = {}
        cost, priced = 0.0, True
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self._api("download", lambda fid=file_id: self.api.files.content(fid))
            for line in content.content.splitlines():
                if not line.strip():
                    continue
                item = json.loads(line)
                cid, response, error = item.get("custom_id"), item.get("response"), item.get("error")
                if response and response.get("status_code"):
                    body = response.get("body")
                    outcomes[cid] = (int(response["status_code"]), json.dumps(body).encode())
                    usage = body.get("usage") if isinstance(body, dict) else None
                    if usage:
                        c = cost_usd(self.model, usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), True)
                        priced = priced and c is not None
                        cost += c or 0.0
                elif (
                    error
                    and error.get("code") in NOT_RUN
                    and not (error.get("code") == "batch_cancelled" and batch.status == "cancelled")
                ):
                    outcomes[cid] = f"batch {batch.id} {batch.status}: {error.get('message') or error.get('code')}"
                elif error and error.get("code") in RETRYABLE_LINE:
                    outcomes[cid] = (RETRYABLE_LINE[error["code"]], json.dumps({"error": error}).encode())
                else:
                    reason = (error or {}).get("message") or (error or {}).get("code") or "no response"
                    outcomes[cid] = BatchFailure(f"batch {batch.id} ({batch.status}) did not answer: {reason}")
        if batch.status == "failed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            reason = "; ".join(e.message or e.code or "" for e in errors) or "no reason given"
            failure = BatchFailure(redact(f"batch {batch.id} failed: {reason}"))
            outcomes.update((cid, failure) for cid in cids if cid not in outcomes)
        elif batch.status == "cancelled":
            failure = BatchFailure(f"batch {batch.id} was cancelled")
            outcomes.update((cid, failure) for cid in cids if cid not in outcomes)
        for cid in cids:  # lost lines: run them again
            outcomes.setdefault(cid, f"batch {batch.id} ({batch.status}) returned no line for it")
        self._note(local, collected=True, cost=cost if priced else None)
        return outcomes

    # ---- API calls, journal, progress -------------------------------------------------------
    async def _api(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """One Batch API call under the shared retry policy; fatal errors trip the run's breaker."""
        breaker, host = self.llm.breaker, host_of(self.spec)

        def retry(exc: BaseException) -> bool:
            if (
                isinstance(exc, openai.APIStatusError)
                and exc.status_code in (404, 405)
                and what in ("upload", "create")
            ):
                breaker.trip(
                    f"{host} has no Batch API (HTTP {exc.status_code} on {exc.request.url.path}); "
                    "run without --batch, or point at an endpoint that implements /v1/files and /v1/batches"
                )
                return False
            breaker.failure(exc, self.spec)
            return transient(exc) and breaker.reason is None

        async def counted() -> Any:
            self.progress.http_requests += 1
            return await call()

        try:
            return await self.llm.retried(counted, retry=retry)
        except Exception as exc:
            if breaker.reason is not None:
                raise BatchFailure(breaker.reason) from None
            diagnosis = diagnose(exc, self.spec)
            raise BatchFailure(f"batch {what} failed: {diagnosis.sentence if diagnosis else describe(exc)}") from None

    def _note(self, local: str, **fields: Any) -> None:
        self._count(self.journal.write(local, **fields))

    def _count(self, record: dict[str, Any]) -> None:
        p = self.progress
        new = record["id"] not in p.states
        p.states[record["id"]] = record.get("state", "?")
        if new:
            p.batches += 1
            p.requests += record.get("requests", 0)
            p.expected_cost += record.get("expected_cost") or 0.0
        p.in_progress = sum(s not in FINAL for s in p.states.values())
        counts = record.get("counts")
        if counts and record.get("state") in FINAL and not record.get("_counted"):
            record["_counted"] = True
            p.completed += counts.get("completed", 0)
            p.failed += counts.get("failed", 0)
        if self.llm.on_batch is not None:
            self.llm.on_batch(p)

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        await self.api.close()
        if not self._closed:
            self._closed = True
            relaxed_gc(False)


# ----------------------------------------------------------------------------- helpers
#: The youngest generation's collection threshold while requests wait for batches.
GC_YOUNG = 50_000
_gc = {"users": 0, "saved": (700, 10, 10)}


def relaxed_gc(on: bool) -> None:
    """Make CPython's cyclic garbage collector run less often while collectors exist (``on``), and
    restore its thresholds when the last one closes. Tens of thousands of requests wait for their
    batches at once, each a few hundred live objects, and every older-generation collection walks
    all of them: at the default threshold (700) that walk took about 40% of the client's CPU in
    ``benchmarks/bench_batch.py``. Memory is reclaimed by reference counting as usual; only cycles
    wait a little longer."""
    if on:
        if not _gc["users"]:
            _gc["saved"] = young, *older = gc.get_threshold()
            gc.set_threshold(max(GC_YOUNG, young), *older)
        _gc["users"] += 1
    elif _gc["users"]:
        _gc["users"] -= 1
        if not _gc["users"]:
            gc.set_threshold(*_gc["saved"])


def _expected_cost(model: str, data: bytes) -> float | None:
    """About what the batch will cost: its bytes as prompt tokens (4 a token) plus a few hundred
    answer tokens a request, at batch prices; None for models without a price."""
    lines = data.count(b"\n")
    return cost_usd(model, len(data) // 4, 300 * lines, True)
