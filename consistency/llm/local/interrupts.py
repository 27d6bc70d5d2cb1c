"""Exit signals this process received, for waits in worker threads that a signal handler cannot reach.

The local model's weights are downloaded and its server started in a worker thread (the event loop
stays free), for up to minutes. SIGTERM or Ctrl-C interrupts the main thread only; the handler of
:mod:`.server` notes the signal here, and those waits poll :func:`check` and give up at once.
"""

from __future__ import annotations

from .errors import LocalModelError

_RECEIVED: list[int] = []


def note(signum: int) -> None:
    _RECEIVED.append(signum)


def mark() -> int:
    """Where the record stands now (pass it to :func:`check`)."""
    return len(_RECEIVED)


def check(since: int, doing: str) -> None:
    """Raise :class:`LocalModelError` if a signal arrived after ``since`` (:func:`mark`)."""
    if len(_RECEIVED) > since:
        raise LocalModelError(f"{doing} was interrupted")
