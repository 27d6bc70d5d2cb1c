"""How the LLM layer tells failures apart and words them: shared by the client and the batch collector.

:func:`transient` says whether a failed HTTP attempt is worth another (429, 5xx, timeouts, dropped
connections, a body that is not JSON); :func:`describe` turns any failure into the one line that
goes into a call's error and the logs, secrets redacted.
"""

from __future__ import annotations

import json

import httpx2
import openai

from .retry import transient_status
from .secrets import redact


class BatchFailure(RuntimeError):
    """A request its batch could not answer (cancelled, expired too often, a batch that failed):
    recorded as the call's error; retrying it at once would not help."""


def transient(exc: BaseException) -> bool:
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, openai.APIResponseValidationError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return transient_status(exc.status_code)
    return isinstance(exc, (json.JSONDecodeError, httpx2.TransportError))


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
