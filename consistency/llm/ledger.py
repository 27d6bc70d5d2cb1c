"""What one call sent and was billed, across all its HTTP attempts.

The ledger lives in a context variable set for the duration of one :class:`~.client.LLM` call, so
that whatever that call runs (the chat create of :mod:`.chat`, a batch collector of :mod:`.batch`,
the token accounting of each attempt) adds to the same record without being handed it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field

from .accounting import Usage


@dataclass
class Ledger:
    """What one call sent and was billed, across all its HTTP attempts (kept in a context variable,
    which the HTTP client's request hook and the token accounting of each attempt see)."""

    requests: int = 0
    batched: int = 0  # requests answered by a batch
    usage: Usage = field(default_factory=Usage)

    def add(self, usage: Usage) -> None:
        u = self.usage
        cost = None if u.cost is None and usage.cost is None else (u.cost or 0.0) + (usage.cost or 0.0)
        self.usage = Usage(u.prompt_tokens + usage.prompt_tokens, u.completion_tokens + usage.completion_tokens, cost)


LEDGER: ContextVar[Ledger | None] = ContextVar("llm_call_ledger", default=None)


def batched() -> bool:
    """Whether the current call was answered by batches only (it is then billed at batch prices)."""
    ledger = LEDGER.get()
    return ledger is not None and 0 < ledger.batched == ledger.requests
