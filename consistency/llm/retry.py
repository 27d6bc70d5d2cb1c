"""The retry policy every outgoing HTTP call of the project shares (LLM calls, web APIs).

Transient failures (429, 408/409/425, 5xx, timeouts, dropped connections) are retried; the wait is
the server's ``Retry-After`` (or ``retry-after-ms``) when it gives one, else exponential backoff
with full jitter, never longer than ``max_backoff``.
"""

from __future__ import annotations

import email.utils
import random
import time

from tenacity import RetryCallState

#: HTTP statuses worth retrying besides 5xx.
TRANSIENT_STATUS = frozenset({408, 409, 425, 429})


def transient_status(status: int) -> bool:
    return status in TRANSIENT_STATUS or status >= 500


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), if it did."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(parsed.timestamp() - time.time(), 0.0) if parsed else None


def backoff(exc: BaseException | None, attempt: int, max_backoff: float) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): the server's hint, else
    jittered exponential backoff (up to 0.5 s, 1 s, 2 s, ...), never more than ``max_backoff``."""
    hinted = retry_after(exc)
    if hinted is not None:
        return min(hinted, max_backoff)
    return random.uniform(0.0, min(max_backoff, 0.5 * 2.0 ** (attempt - 1)))


def backoff_wait(state: RetryCallState, max_backoff: float) -> float:
    """:func:`backoff` as a tenacity ``wait``."""
    return backoff(state.outcome.exception() if state.outcome else None, state.attempt_number, max_backoff)
