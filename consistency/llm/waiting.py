"""Time spent waiting for a turn (a model's concurrency slot, a rate limit), kept apart from work.

A forecast's timeout (``--forecast-timeout``) bounds the work on one question. When many questions
share a model's few slots (the bundled model answers 4 at once), most of a question's wall time can
be spent queued for a slot, which says nothing about the question: counting it made long queues fail
questions that were never slow. The LLM layer marks each such wait with :func:`waiting`;
:func:`within_work_time` runs a coroutine with a timeout on its own clock that stops while any of
its calls waits for a turn. What counts: time from the start of the forecast, less the time during
which at least one of its calls was queued.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Coroutine
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")


class WorkClock:
    """Seconds worked since it started: wall time less the time some call of it was waiting."""

    def __init__(self, parent: WorkClock | None = None) -> None:
        self.parent = parent  # an enclosing forecast (a crowd's member inside the crowd) waits too
        self.started = time.monotonic()
        self.waited = 0.0
        self._waiting = 0
        self._since = 0.0

    def enter(self) -> None:
        if self._waiting == 0:
            self._since = time.monotonic()
        self._waiting += 1
        if self.parent is not None:
            self.parent.enter()

    def leave(self) -> None:
        self._waiting -= 1
        if self._waiting == 0:
            self.waited += time.monotonic() - self._since
        if self.parent is not None:
            self.parent.leave()

    def worked(self) -> float:
        now = time.monotonic()
        waiting = now - self._since if self._waiting else 0.0
        return now - self.started - self.waited - waiting


_CLOCK: ContextVar[WorkClock | None] = ContextVar("work_clock", default=None)


@asynccontextmanager
async def waiting() -> AsyncIterator[None]:
    """Mark a wait for a turn: it does not count against the enclosing forecast's timeout."""
    clock = _CLOCK.get()
    if clock is None:
        yield
        return
    clock.enter()
    try:
        yield
    finally:
        clock.leave()


async def waited(turn: Awaitable[T]) -> T:
    """``await turn`` (a rate limiter's acquire) as a wait that does not count as work."""
    async with waiting():
        return await turn


@asynccontextmanager
async def slot(semaphore: asyncio.Semaphore) -> AsyncIterator[None]:
    """``async with semaphore``, its acquisition counted as waiting."""
    async with waiting():
        await semaphore.acquire()
    try:
        yield
    finally:
        semaphore.release()


async def within_work_time(work: Coroutine[Any, Any, T], timeout: float | None) -> T:
    """``await work``, cancelled (raising :class:`TimeoutError`) once it has worked ``timeout`` seconds."""
    if timeout is None:
        return await work
    clock = WorkClock(_CLOCK.get())
    token = _CLOCK.set(clock)
    try:
        task = asyncio.ensure_future(work)  # the task's context holds the clock
    finally:
        _CLOCK.reset(token)
    try:
        while not task.done():
            left = timeout - clock.worked()
            if left <= 0:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise TimeoutError
            await asyncio.wait({task}, timeout=left)
    except BaseException:
        task.cancel()
        raise
    return task.result()
