"""The one progress display of every long command: a live bar on a terminal, plain lines elsewhere.

On a terminal, rich draws the bars. When stderr is a file, a pipe or a CI log, a live display prints
nothing until it ends, so :class:`Progress` prints a plain line per task instead (``forecasting 12/33
failed 0 ... 0:00:25``) when the task starts, every ``interval`` seconds while it changes (the latest
task at least every :data:`HEARTBEAT` intervals while it waits) and when it ends, as pip and inspect do.

What the bundled local model is doing before its first answer (downloading its weights, starting its
server: tens of seconds) reaches the user the same way: :func:`local_model_status` routes the log
records of :mod:`consistency.llm.local` to the active display (its tasks' info column on a terminal,
a line of its own in plain mode), or prints them as lines when no display is active (``cc ask``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from .console import err

if TYPE_CHECKING:
    from ..evaluation import Tally
    from ..llm.batch import BatchProgress

#: Seconds between plain progress lines of a task that changes.
INTERVAL = 5.0
#: A task that does not change still gets a line every this many intervals (the run is alive).
HEARTBEAT = 6

_LOCAL_LOGGER = "consistency.llm.local"


def clock(seconds: float) -> str:
    """``h:mm:ss``, as rich's elapsed column shows it."""
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Task:
    """One line of a display: a description, a count out of a total (None: unknown) and an info text."""

    def __init__(self, progress: Progress, description: str, total: int | None, completed: int, info: str) -> None:
        self.progress, self.description, self.total = progress, description, total
        self.completed, self.info = completed, info
        self.started = time.monotonic()
        self.rich_id: Any = None
        self.shown: tuple[Any, ...] | None = None  # what the last plain line said
        self.shown_at = 0.0

    def update(self, *, completed: int | None = None, info: str | None = None, total: int | None = None) -> None:
        if completed is not None and completed != self.completed:
            self.completed = completed
            self.progress.note(None)  # a result arrived: the waiting message has done its job
        if info is not None:
            self.info = info
        if total is not None:
            self.total = total
        self.progress.refresh(self)

    @property
    def done(self) -> bool:
        return self.total is not None and self.completed >= self.total

    def line(self) -> str:
        count = f"{self.completed}/{'?' if self.total is None else self.total}"
        return f"{self.description} {count} {self.info} {clock(time.monotonic() - self.started)}"

    def state(self) -> tuple[Any, ...]:
        return (self.completed, self.total, self.info)


class Progress:
    """Tasks shown live on a terminal (rich), or as plain lines every ``interval`` seconds elsewhere.

    ``plain`` forces a mode (default: plain unless the console is a terminal); ``transient`` removes
    the bars when the display stops (terminal only). Use as a context manager, or ``start``/``stop``.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        plain: bool | None = None,
        interval: float = INTERVAL,
        transient: bool = False,
    ) -> None:
        self.console = console or err
        self.plain = not self.console.is_terminal if plain is None else plain
        self.interval = interval
        self.tasks: list[Task] = []
        self._note: str | None = None
        self._note_kind: str | None = None
        self._noted_at = 0.0
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._status: contextlib.ExitStack | None = None
        self._rich: RichProgress | None = None
        if not self.plain:
            self._rich = RichProgress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=transient,
            )
        self.started = False

    # ------------------------------------------------------------------ life cycle
    def start(self) -> Progress:
        if self.started:
            return self
        self.started = True
        _ACTIVE.append(self)
        self._status = contextlib.ExitStack()
        self._status.enter_context(local_model_status())
        if self._rich is not None:
            self._rich.start()
        else:
            with self._lock:
                for task in self.tasks:  # those added before the start
                    self._print_task(task, force=True)
            self._stop.clear()
            self._ticker = threading.Thread(target=self._tick, name="cc-progress", daemon=True)
            self._ticker.start()
        return self

    def stop(self) -> None:
        if not self.started:
            return
        self.started = False
        if self._rich is not None:
            self._rich.stop()
        else:
            self._stop.set()
            if self._ticker is not None:
                self._ticker.join(timeout=5)
            with self._lock:
                for task in self.tasks:
                    self._print_task(task, force=False)  # its last state, unless that was printed already
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        if self._status is not None:
            self._status.close()

    def __enter__(self) -> Progress:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ tasks
    def task(self, description: str, total: int | None, completed: int = 0, info: str = "") -> Task:
        """A new line on the display (printed at once in plain mode)."""
        with self._lock:
            task = Task(self, description, total, completed, info)
            self.tasks.append(task)
            if self._rich is not None:
                task.rich_id = self._rich.add_task(description, total=total, completed=completed, info=info)
            elif self.started:
                self._print_task(task, force=True)
        return task

    def refresh(self, task: Task) -> None:
        with self._lock:
            if self._rich is not None:
                shown = self._note or task.info
                self._rich.update(task.rich_id, completed=task.completed, total=task.total, info=shown)
            elif task.done and task.shown != task.state():
                self._print_task(task, force=True)  # the end of a task is said at once

    def note(self, text: str | None, kind: str | None = None) -> None:
        """A message about what the display waits for (``None`` clears it): in the tasks' info column on
        a terminal until the next result, a line of its own in plain mode, where a message of the same
        ``kind`` as the last (a download's progress) is printed at most once per interval."""
        with self._lock:
            self._note = text
            if self._rich is not None:
                for task in self.tasks:
                    self._rich.update(task.rich_id, info=text or task.info)
                return
            now = time.monotonic()
            if not text or (kind is not None and kind == self._note_kind and now - self._noted_at < self.interval):
                return
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)
            self._note_kind, self._noted_at = kind, now

    # ------------------------------------------------------------------ plain mode
    def _print_task(self, task: Task, force: bool) -> None:
        state = task.state()
        if not force and task.shown == state:
            return
        self.console.print(task.line(), markup=False, highlight=False, soft_wrap=True)
        task.shown, task.shown_at = state, time.monotonic()

    def _tick(self) -> None:
        """Every interval: the lines that changed; and the latest task's line, if it is still under way
        and said nothing for :data:`HEARTBEAT` intervals (the command is alive, waiting)."""
        while not self._stop.wait(self.interval):
            with self._lock:
                now = time.monotonic()
                for task in self.tasks:
                    waiting = task is self.tasks[-1] and not task.done
                    stale = waiting and now - task.shown_at >= HEARTBEAT * self.interval - 0.01
                    if task.shown != task.state() or stale:
                        self._print_task(task, force=True)


@contextlib.contextmanager
def working(text: str, console: Console | None = None) -> Iterator[None]:
    """A step with no count (drawing a report): a spinner on a terminal, the one line elsewhere."""
    shown = console or err
    if not shown.is_terminal:
        shown.print(text, markup=False, highlight=False, soft_wrap=True)
        yield
        return
    with shown.status(text):
        yield


class RunBar:
    """``cc evaluate``'s display, fed by the run's callbacks (:class:`~consistency.evaluation.RunOptions`):
    the run's :class:`~consistency.evaluation.Tally`, and in batch mode a second line with the batches' state."""

    def __init__(self) -> None:
        self.progress = Progress()
        self.task: Task | None = None
        self.batches: Task | None = None

    def start(self, tally: Tally) -> None:
        self.tally = tally
        self.task = self.progress.start().task("forecasting", tally.total, tally.done, tally.text())

    def record(self, record: dict[str, Any]) -> None:
        self.tally.add(record)
        if self.task is not None:
            self.task.update(completed=self.tally.finished, info=self.tally.text())

    def batch(self, progress: BatchProgress) -> None:
        if self.batches is None:
            self.batches = self.progress.task("batches", total=None, info=progress.text())
        else:
            self.batches.update(info=progress.text())

    def stop(self) -> None:
        self.progress.stop()  # never started (an error before the run): nothing to close


# ---------------------------------------------------------------------- the local model's messages

_ACTIVE: list[Progress] = []
_ROUTED = [0]  # nested local_model_status() blocks: the handler is attached once


class _LocalModelHandler(logging.Handler):
    """The local model's log records: information as the active display's note, warnings as warnings."""

    def __init__(self) -> None:
        super().__init__()
        self.lines = Progress(plain=True)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record is not worth a crash
            return
        if record.levelno >= logging.WARNING:
            err.print(f"[yellow]warning[/yellow] {text}", highlight=False)
        else:  # no display (cc ask): lines, a download's progress once per interval
            shown = _ACTIVE[-1] if _ACTIVE else self.lines
            shown.note(text, kind=str(record.msg))


@contextlib.contextmanager
def local_model_status() -> Iterator[None]:
    """Within the block, what the bundled local model is doing (weights downloaded with size and rate,
    the server starting, then ready) is shown to the user, whatever the logging level."""
    logger = logging.getLogger(_LOCAL_LOGGER)
    if _ROUTED[0]:
        _ROUTED[0] += 1
        try:
            yield
        finally:
            _ROUTED[0] -= 1
        return
    handler, saved = _LocalModelHandler(), (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # shown here, not a second time by the root handler
    _ROUTED[0] = 1
    try:
        yield
    finally:
        _ROUTED[0] = 0
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
