"""Where forecasting-tools bot calls run: each on a worker thread with an event loop of its own.

A bot may block its event loop (synchronous HTTP in a search tool, ``time.sleep``). Run on the
run's own loop, that would stall every question at once, and all of them would time out; on a
thread of its own it costs only its own question. Two things a bot shares across those loops are
made to work there: its asyncio semaphores and locks (:func:`share_loop_primitives`) and litellm's
global logging worker (:func:`logging_worker_per_thread`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class SharedSemaphore:
    """An ``asyncio.Semaphore`` (or ``Lock``, with 1) that event loops in different threads can share.

    A bot's own limiter (the template bots keep one at class level) must hold across its questions,
    which run on threads of their own; an asyncio primitive belongs to one loop. Waiting polls, briefly:
    a limiter waits on a question's work, which takes seconds."""

    def __init__(self, value: int = 1) -> None:
        self._value = max(1, value)
        self._taken = 0
        self._guard = threading.Lock()

    def _try(self) -> bool:
        with self._guard:
            if self._taken >= self._value:
                return False
            self._taken += 1
            return True

    async def acquire(self) -> bool:
        delay = 0.001
        while not self._try():
            await asyncio.sleep(delay)
            delay = min(2 * delay, 0.05)
        return True

    def release(self) -> None:
        with self._guard:
            self._taken = max(0, self._taken - 1)

    def locked(self) -> bool:
        return self._taken >= self._value

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


def share_loop_primitives(bot: Any) -> None:
    """Replace the asyncio semaphores and locks on the bot and its classes by :class:`SharedSemaphore`
    of the same size, so the bot's own limits hold across the threads its questions run on."""
    holders: list[Any] = [bot, *[c for c in type(bot).__mro__ if c is not object]]
    for holder in holders:
        for name, value in list(vars(holder).items()):
            if isinstance(value, asyncio.Lock):
                setattr(holder, name, SharedSemaphore(1))
            elif isinstance(value, asyncio.Semaphore):
                size = getattr(value, "_bound_value", None) or getattr(holder, "_max_concurrent_questions", None)
                setattr(holder, name, SharedSemaphore(size or max(1, value._value)))


class _Worker:
    """A daemon thread running an event loop of its own, forever (reused for one bot call at a time)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), name="cc-bot-call", daemon=True)
        self.thread.start()
        ready.wait()

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        if getattr(asyncio, "_nest_patched", False):  # the library made loops re-entrant: this one too
            import nest_asyncio

            nest_asyncio.apply(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def stop(self, timeout: float) -> None:
        """End what still runs on the loop (litellm's logging tasks), then the loop and its thread."""

        async def wind_down() -> None:
            tasks = [t for t in asyncio.all_tasks(self.loop) if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.loop.stop()

        asyncio.run_coroutine_threadsafe(wind_down(), self.loop)
        self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()


class BotThreads:
    """Where bot calls run: each on a thread and event loop of its own, so a bot that blocks its loop
    (synchronous HTTP in a search tool, ``time.sleep``) costs only its own question, which times out
    alone while the run and the other questions go on. A thread whose call ended is reused; its loop
    lives on, as litellm keeps HTTP clients per loop."""

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._at_exit = False  # close() registered

    def _take(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            if not self._at_exit:
                self._at_exit = True
                atexit.register(self.close)
        return _Worker()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the idle workers cleanly (at exit). A worker still blocked in a bot's call is left to
        the process's end: its thread is a daemon."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop(timeout)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """``await work`` on a worker; cancelling this cancels the work there (when its loop next runs)."""
        main = asyncio.get_running_loop()
        result: asyncio.Future[T] = main.create_future()
        worker = self._take()
        task: list[asyncio.Task[T]] = []

        def settle(done: asyncio.Task[T]) -> None:  # on the run's loop
            if result.done():
                return
            if done.cancelled():
                result.cancel()
            elif done.exception() is not None:
                result.set_exception(done.exception())  # type: ignore[arg-type]
            else:
                result.set_result(done.result())

        def finished(done: asyncio.Task[T]) -> None:  # on the worker's loop, once the call really ended
            self._give_back(worker)
            with contextlib.suppress(RuntimeError):  # the run's loop is gone: nobody waits for this any more
                main.call_soon_threadsafe(settle, done)

        def start() -> None:
            task.append(worker.loop.create_task(work))
            task[0].add_done_callback(finished)

        worker.loop.call_soon_threadsafe(start)
        try:
            return await result
        except asyncio.CancelledError:
            worker.loop.call_soon_threadsafe(lambda: task[0].cancel())  # after start(): callbacks run in order
            raise


THREADS = BotThreads()


class _LoggingWorkers:
    """litellm's logging worker, one per thread: litellm queues every call's success callbacks (the
    library's cost tracking among them) on one global worker bound to one event loop at a time, which
    bot calls on concurrent loops would pull back and forth (running callbacks twice, or never)."""

    def __init__(self, main: Any, make: Callable[[], Any]) -> None:
        self._main, self._make, self._local = main, make, threading.local()

    def _own(self) -> Any:
        worker = getattr(self._local, "worker", None)
        if worker is None:
            worker = self._main if threading.current_thread() is threading.main_thread() else self._make()
            self._local.worker = worker
        return worker

    def __getattr__(self, name: str) -> Any:
        return getattr(self._own(), name)


def logging_worker_per_thread() -> None:
    """Give litellm's logging worker one instance per thread (see :class:`_LoggingWorkers`)."""
    try:
        from litellm.litellm_core_utils import logging_worker
    except ImportError:  # another litellm layout: nothing to share out
        return
    current = getattr(logging_worker, "GLOBAL_LOGGING_WORKER", None)
    if current is not None and not isinstance(current, _LoggingWorkers):
        logging_worker.GLOBAL_LOGGING_WORKER = _LoggingWorkers(current, logging_worker.LoggingWorker)
