"""Errors that cannot succeed on retry, and the breaker that stops a run on them.

A wrong key (401), no access (403), an unknown model or URL (404), a request the server rejects
(400/422), a request parameter the client does not take (``TypeError``), or an endpoint that
was never reached (connection refused, no route, DNS failure): asking again gives
the same answer, so after a few identical occurrences the :class:`Breaker` trips and the run stops
with one sentence naming the endpoint's host, the cause and the fix. Transient errors (429, 5xx,
timeouts of a reachable server) never count: they keep their retries.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai

from ..errors import RunFailed
from .errors import connect_cause
from .secrets import redact
from .specs import ModelSpec

#: Identical occurrences of an error that cannot succeed on retry before a run stops.
FATAL_AFTER = 3

#: Server errors (5xx) in a row, with no good answer before them, that stop a run.
SERVER_ERRORS_AFTER = 8

_DEFAULT_HOSTS = {"openai": "api.openai.com", "local": "the bundled local model server"}
_FATAL_STATUS = {400, 401, 403, 404, 422}


class FatalError(RunFailed):
    """Work stopped on an error that cannot succeed on retry; ``str()`` is the one sentence to print.

    ``run_dir`` is set when a run directory holds what finished (to resume once the cause is fixed).
    """

    def __init__(self, reason: str, run_dir: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.run_dir = run_dir


def host_of(spec: ModelSpec) -> str:
    """The endpoint's host (``host:port``), never its credentials."""
    if spec.base_url:
        parts = urlsplit(spec.base_url)
        if parts.hostname:
            return parts.hostname + (f":{parts.port}" if parts.port else "")
        return urlsplit("//" + spec.base_url).netloc.rpartition("@")[2] or "the endpoint"  # no scheme
    return _DEFAULT_HOSTS.get(spec.provider, spec.provider)


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
    text = error.get("message") or exc.message or ""
    return " ".join(str(text).split())[:200]


@dataclass(frozen=True)
class Diagnosis:
    signature: str  # identical errors share it
    sentence: str  # cause and fix, for the user
    after: int = FATAL_AFTER  # occurrences in a row that stop the run
    needs_unreached: bool = False  # only fatal while the endpoint never answered (connection failures)
    #: only a retry's failure counts: a first connection attempt that timed out may only mean that this
    #: process was too busy to see the connection complete (64 requests starting at once on a loaded machine)
    needs_retry: bool = False


def diagnose(exc: BaseException, spec: ModelSpec) -> Diagnosis | None:
    """What an error means for the endpoint, if it is one that cannot succeed on retry; else None."""
    host, model = host_of(spec), spec.model
    key = spec.key_variable or "the key"
    if isinstance(exc, openai.APIStatusError) and exc.status_code in _FATAL_STATUS:
        status, text = exc.status_code, redact(_message(exc))
        said = f" ({text})" if text else ""
        if status == 401:
            fix = f"check {key} (environment or .env)"
            return Diagnosis(f"401:{text}", f"{host} refused the API key with HTTP 401{said}; {fix}", after=1)
        if status == 403:
            fix = f"check that the key in {key} may use model {model!r}"
            return Diagnosis(f"403:{text}", f"{host} denied access with HTTP 403{said}; {fix}", after=1)
        if status == 404:
            fix = "check the model name and the endpoint URL (it usually ends in /v1)"
            said = f": {text}" if text else ""
            return Diagnosis(f"404:{text}", f"{host} has no model {model!r} (HTTP 404{said}); {fix}", after=1)
        fix = "remove or correct the request parameter it names (-F options)"
        return Diagnosis(f"{status}:{text}", f"{host} rejected the request with HTTP {status}{said}; {fix}")
    if isinstance(exc, TypeError):
        text = redact(" ".join(str(exc).split()))
        bad = re.search(r"unexpected keyword argument '([^']+)'", text)
        cause = f"the client does not take the request parameter {bad.group(1)!r}" if bad else f"TypeError: {text}"
        fix = f"remove -F {bad.group(1)}" if bad else "correct the forecaster's request parameters"
        return Diagnosis(f"type:{text}", f"cannot call {host}: {cause}; {fix}")
    if isinstance(exc, openai.APIStatusError) and exc.status_code >= 500 and not getattr(exc, "from_batch", False):
        # transient by nature, so retried; but an endpoint that has never answered and fails every
        # request the same way is broken, not busy: stop instead of retrying every question
        text = redact(_message(exc))
        said = f" ({text})" if text else ""
        return Diagnosis(
            f"5xx:{exc.status_code}:{text}",
            f"{host} answered HTTP {exc.status_code}{said} each time it was asked; "
            "check the server (its logs) or try again later",
            after=SERVER_ERRORS_AFTER,
            needs_unreached=True,
        )
    cause = connect_cause(exc)
    if cause is not None:
        text = redact(" ".join(str(cause).split())) or type(cause).__name__
        fix = "check that the server is running, the URL and port are right, and the network is up"
        return Diagnosis(
            f"connect:{type(cause).__name__}",
            f"cannot connect to {host} ({type(cause).__name__}: {text}); {fix}",
            needs_unreached=True,
            needs_retry=isinstance(cause, httpx2.ConnectTimeout),
        )
    return None


@dataclass
class _Streak:
    signature: str = ""
    count: int = 0
    answered: bool = False  # the endpoint gave at least one good answer


@dataclass
class Breaker:
    """Counts, per endpoint, identical errors that cannot succeed on retry; trips after ``after`` in a row."""

    after: int = FATAL_AFTER
    reason: str | None = None
    _streaks: dict[str, _Streak] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def success(self, spec: ModelSpec) -> None:
        with self._lock:
            streak = self._streaks.setdefault(spec.text, _Streak())
            streak.answered, streak.count, streak.signature = True, 0, ""

    def failure(self, exc: BaseException, spec: ModelSpec, attempt: int | None = None) -> Diagnosis | None:
        """Count ``exc`` (the failure of a call's ``attempt``-th try, when known); its diagnosis if it cannot
        succeed on retry (then the call is not retried, except a connection failure before the breaker trips)."""
        diagnosis = diagnose(exc, spec)
        if diagnosis is None:
            return None
        if diagnosis.needs_retry and attempt == 1:
            return diagnosis  # not counted: see Diagnosis.needs_retry
        with self._lock:
            streak = self._streaks.setdefault(spec.text, _Streak())
            if diagnosis.needs_unreached and streak.answered:
                return None  # a server that answered before is having a transient problem
            if streak.signature != diagnosis.signature:
                streak.signature, streak.count = diagnosis.signature, 0
            streak.count += 1
            # a diagnosis asking for more occurrences than the breaker's (5xx) gets them; fewer (401) stop sooner
            limit = diagnosis.after if diagnosis.after > FATAL_AFTER else min(diagnosis.after, self.after)
            if streak.count >= limit and self.reason is None:
                self.reason = diagnosis.sentence + "."
            return diagnosis

    def trip(self, reason: str) -> str:
        """Stop now, for a reason known to hold for every call (a missing key, a spec that cannot work)."""
        with self._lock:
            self.reason = self.reason or reason.rstrip(".") + "."
            return self.reason

    def check(self) -> None:
        """Raise :class:`FatalError` once tripped: no new work after that."""
        if self.reason is not None:
            raise FatalError(self.reason)
