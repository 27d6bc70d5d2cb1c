"""What a rule sees and returns, and the combinators that put rules together.

A *rule* is a callable that gets a :class:`ScriptedRequest` and returns a :class:`Reply` (what the
model says) or a :class:`Fault` (what goes wrong: 429, 5xx, hang, malformed body, dropped
connection); it may be sync or async. :mod:`.rules` holds the built-in deterministic rules and
:func:`~.rules.sequence` (whose default is one of them); :mod:`.server` serves a rule over HTTP.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "FAULT_KINDS",
    "Fault",
    "Reply",
    "Rule",
    "ScriptedRequest",
    "every_nth",
    "faults_then",
    "random_faults",
]

_JSON_FORMATS = ("json_schema", "json_object")


# --------------------------------------------------------------------------------------------
# What a rule sees and returns
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """One chat completion request as the rule sees it (and as the server records it)."""

    index: int
    """Global 0-based arrival order since the server started (or since ``reset()``)."""
    body: dict[str, Any]
    model: str
    messages: list[dict[str, Any]]
    last_user_text: str
    tools: list[dict[str, Any]] | None
    response_format: dict[str, Any] | None
    schema: dict[str, Any] | None
    """JSON schema of the requested structured output: the selected tool's parameters, or
    ``response_format.json_schema.schema``; None for free text and for ``json_object``."""
    attempt: int
    """How many requests with the same messages arrived before this one (0 for the first)."""
    tool_name: str | None = None
    """The tool a structured answer goes to: the one ``tool_choice`` names, else the first."""

    @property
    def top_logprobs(self) -> int | None:
        """How many alternatives per token the client asked for (``logprobs: true``), else None."""
        if self.body.get("logprobs") is not True:
            return None
        n = self.body.get("top_logprobs")
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0

    @property
    def wants_json(self) -> bool:
        """Whether the client asked for a structured answer (tools or a JSON response format)."""
        return self.tool_name is not None or response_format_type(self.response_format) in _JSON_FORMATS


@dataclass(frozen=True, slots=True)
class Reply:
    """What the model answers. Build with :meth:`json`, :meth:`text` or :meth:`next_token`."""

    kind: str  # "json", "text" or "tokens"
    value: Any
    finish_reason: str | None = None  # None: "tool_calls" for a tool call, else "stop"

    @classmethod
    def json(cls, obj: Any, *, finish_reason: str | None = None) -> Reply:
        """A structured answer: a tool call if the request offered tools, else JSON in ``content``."""
        json.dumps(obj)  # fail in the rule, where the bug is, not later in the server
        return cls("json", obj, finish_reason)

    @classmethod
    def text(cls, text: str, *, finish_reason: str | None = None) -> Reply:
        """Plain ``content``, never a tool call (a model that ignores the tools it was given)."""
        return cls("text", str(text), finish_reason)

    @classmethod
    def next_token(cls, chances: Mapping[str, float], *, finish_reason: str | None = None) -> Reply:
        """A one-token answer drawn from ``chances`` (token -> probability, summing to at most 1): the most
        likely token is the content, and a request with ``logprobs`` gets the distribution as OpenAI
        reports it (the ``top_logprobs`` most likely tokens; tokens of probability 0 are never listed)."""
        listed = {str(t): float(p) for t, p in chances.items() if p > 0}
        if not listed or any(p > 1 for p in listed.values()) or sum(listed.values()) > 1 + 1e-9:
            raise ValueError(f"next_token needs probabilities in (0, 1] summing to at most 1, got {dict(chances)}")
        return cls("tokens", dict(sorted(listed.items(), key=lambda item: -item[1])), finish_reason)


@dataclass(frozen=True, slots=True)
class Fault:
    """Something going wrong on the server side. Build with the class methods."""

    kind: str  # "status", "hang", "malformed" or "drop"
    status: int = 200
    retry_after: float | None = None
    seconds: float = 0.0
    then: Reply | None = None
    message: str = ""
    code: str | None = None

    @classmethod
    def rate_limit(cls, retry_after: float = 0.1) -> Fault:
        """HTTP 429 with ``Retry-After`` (seconds, may be fractional) and ``retry-after-ms``."""
        return cls("status", 429, retry_after=retry_after, message="Rate limit reached (scripted).")

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        """An HTTP 5xx with an OpenAI-style error body."""
        if not 500 <= status <= 599:
            raise ValueError(f"server_error status must be 5xx, got {status}")
        return cls("status", status, message=f"The server had an error (scripted {status}).")

    @classmethod
    def error(cls, status: int, message: str, code: str | None = None) -> Fault:
        """An HTTP 4xx as OpenAI sends it: 401 for a bad key, 404 for an unknown model, 400 for a bad parameter."""
        if not 400 <= status <= 499:
            raise ValueError(f"error status must be 4xx, got {status}")
        return cls("status", status, message=message, code=code)

    @classmethod
    def hang(cls, seconds: float = 30.0, then: Reply | None = None) -> Fault:
        """Wait ``seconds`` before answering; the answer is ``then`` or the built-in forecast reply.

        Only this request waits: the server keeps serving others. If the client gives up and
        disconnects meanwhile, the request is dropped silently.
        """
        return cls("hang", seconds=float(seconds), then=then)

    @classmethod
    def malformed(cls) -> Fault:
        """HTTP 200, ``Content-Type: application/json``, and a body that is not JSON."""
        return cls("malformed")

    @classmethod
    def drop(cls) -> Fault:
        """Close the TCP connection without sending any response."""
        return cls("drop")


Outcome = Reply | Fault
Rule = Callable[[ScriptedRequest], Outcome | Awaitable[Outcome]]


async def call_rule(rule: Rule, request: ScriptedRequest) -> Outcome:
    """Run a sync or async rule and check what it returns, so rule bugs fail loudly."""
    result = rule(request)
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, (Reply, Fault)):
        raise TypeError(f"a rule must return Reply or Fault, got {type(result).__name__}")
    return result


def response_format_type(response_format: Any) -> str | None:
    return response_format.get("type") if isinstance(response_format, Mapping) else None


# --------------------------------------------------------------------------------------------
# Combinators
# --------------------------------------------------------------------------------------------


def faults_then(rule: Rule, *faults: Fault) -> Rule:
    """For each distinct message list, answer its first attempts with ``faults`` in order, then ``rule``.

    Attempts are counted by the server per message list, so a client that retries the same request
    sees the faults and then a success, as with a flaky provider.
    """

    async def faults_then_rule(request: ScriptedRequest) -> Outcome:
        if request.attempt < len(faults):
            return faults[request.attempt]
        return await call_rule(rule, request)

    return faults_then_rule


def together(rule: Rule, n: int, wait: float = 30.0) -> Rule:
    """Hold each of the first ``n`` requests until all ``n`` have arrived, then answer with ``rule``.

    A test of concurrency without a clock: the ``n`` are answered only if the client sends ``n`` at once
    and the server serves them at once (else, after ``wait`` seconds, they get a 500 saying so); with
    :attr:`ScriptedServer.max_in_flight` this checks a limit from both sides.
    """
    arrived: list[int] = []
    everyone: list[asyncio.Event] = []  # made on the server's loop, at the first request

    async def together_rule(request: ScriptedRequest) -> Outcome:
        if len(arrived) < n:
            if not everyone:
                everyone.append(asyncio.Event())
            arrived.append(request.index)
            if len(arrived) == n:
                everyone[0].set()
            try:
                await asyncio.wait_for(everyone[0].wait(), wait)
            except TimeoutError:
                return replace(Fault.server_error(500), message=f"only {len(arrived)} of {n} requests came together")
        return await call_rule(rule, request)

    return together_rule


def every_nth(rule: Rule, n: int, fault: Fault) -> Rule:
    """Answer requests number n, 2n, 3n... (1-based, in global arrival order) with ``fault``."""
    if n < 1:
        raise ValueError("n must be >= 1")

    async def every_nth_rule(request: ScriptedRequest) -> Outcome:
        if (request.index + 1) % n == 0:
            return fault
        return await call_rule(rule, request)

    return every_nth_rule


#: The faults :func:`random_faults` draws from, by the names ``--fault`` takes.
FAULT_KINDS = ("429", "500", "hang", "malformed", "drop")


def random_faults(
    rule: Rule,
    rates: Mapping[str, float],
    *,
    seed: int = 0,
    hang_seconds: float = 30.0,
    retry_after: float = 0.1,
) -> Rule:
    """Answer a random share of requests with faults: ``rates`` maps a kind of :data:`FAULT_KINDS`
    to the probability of that fault on any one request (``{"429": 0.04, "hang": 0.04}``).

    The draw is a function of ``seed``, the messages and the attempt number, so a run is
    reproducible and a retry of a failed request gets a fresh draw, as with a flaky provider.
    """
    unknown = set(rates) - set(FAULT_KINDS)
    if unknown:
        raise ValueError(f"unknown fault kind(s) {', '.join(sorted(unknown))}; known: {', '.join(FAULT_KINDS)}")
    if any(r < 0 for r in rates.values()) or sum(rates.values()) > 1:
        raise ValueError(f"fault rates must be non-negative and sum to at most 1, got {dict(rates)}")
    faults = {
        "429": Fault.rate_limit(retry_after),
        "500": Fault.server_error(500),
        "hang": Fault.hang(hang_seconds),
        "malformed": Fault.malformed(),
        "drop": Fault.drop(),
    }
    bands = []
    edge = 0.0
    for kind in FAULT_KINDS:
        if rates.get(kind):
            edge += rates[kind]
            bands.append((edge, faults[kind]))

    async def random_faults_rule(request: ScriptedRequest) -> Outcome:
        key = json.dumps([seed, request.messages, request.attempt], sort_keys=True).encode()
        draw = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") / 2**64
        for edge, fault in bands:
            if draw < edge:
                return fault
        return await call_rule(rule, request)

    return random_faults_rule
