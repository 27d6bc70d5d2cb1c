"""How the LLM layer tells failures apart and words them: shared by the client and the batch collector.

:func:`transient` says whether a failed HTTP attempt is worth another (429, 5xx, timeouts, dropped
connections, a body that is not JSON); :func:`describe` turns any failure into the one line that
goes into a call's error and the logs, secrets redacted.
"""

from __future__ import annotations

import json

import httpx2
import openai

from ..errors import RunFailed
from .retry import transient_status
from .secrets import redact


class BatchFailure(RunFailed):
    """A request its batch could not answer (cancelled, expired too often, a batch that failed):
    recorded as the call's error; retrying it at once would not help."""


def transient(exc: BaseException) -> bool:
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, openai.APIResponseValidationError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return transient_status(exc.status_code)
    return isinstance(exc, (json.JSONDecodeError, httpx2.TransportError))


#: Errors that mean the server was never reached (down, refusing, unroutable): a retry must back off.
CONNECT_ERRORS = (httpx2.ConnectError, httpx2.ConnectTimeout)


def connect_cause(exc: BaseException | None) -> BaseException | None:
    """The connection failure behind ``exc`` (its cause or context, a few levels down), if any."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, CONNECT_ERRORS):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def lost_in_transit(exc: BaseException) -> bool:
    """A failed attempt that carries no sign of a busy server: it timed out (the timeout was the wait),
    its connection dropped after it was made, or its body could not be read. Its first retry goes at
    once; a 429, a 5xx or a refused connection, which do say the server is busy or down, back off."""
    if isinstance(exc, (json.JSONDecodeError, openai.APIResponseValidationError)):
        return True
    if isinstance(exc, (openai.APIConnectionError, httpx2.TransportError)):  # APITimeoutError included
        return connect_cause(exc) is None
    return False


def describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, BatchFailure):  # its batch could not answer it (not retried): the sentence says why
        return redact(str(exc))
    if isinstance(exc, openai.APIStatusError):
        return redact(f"HTTP {exc.status_code}: {short(exc)}")
    return redact(f"{type(exc).__name__}: {short(exc)}")


def short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return redact(text if len(text) <= limit else text[: limit - 1] + "…")
