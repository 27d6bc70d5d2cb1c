"""A run's spending cap (``evaluate(..., max_cost=USD)``, ``cc evaluate --max-cost``).

The cap counts what the run has recorded as spent, over all its sessions (``run.json``'s totals, killed
sessions recovered from the transcript), plus what this session's client has spent. Once that reaches the
cap, the client makes no new request: the question that needed one is left unasked (not failed), the run
ends ``interrupted`` with the reason recorded, and a resume with a higher cap goes on from there.
Answers from the response cache cost nothing and are still used. Requests already sent when the cap is
reached are answered and paid for, so the spend can pass the cap by what the calls in flight cost (at most
``--concurrency`` calls, each as dear as one answer).
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..forecasters.base import CallsStopped
from ..llm import LLM, LLMResult, LLMSettings
from ..store.meta import StopRecord

log = logging.getLogger(__name__)


class SpendingCapReached(CallsStopped):
    """The run's recorded spend reached its cap: no new model call is made."""


class CappedLLM(LLM):
    """The run's LLM client, refusing new requests (:class:`SpendingCapReached`) once ``spent_before`` (earlier
    sessions) plus this session's spend reaches ``max_cost`` USD."""

    def __init__(
        self,
        settings: LLMSettings,
        max_cost: float,
        spent_before: float = 0.0,
        transcript: str | Path | None = None,
        batches: str | Path | None = None,
    ) -> None:
        super().__init__(settings, transcript=transcript, batches=batches)
        self.max_cost, self.spent_before = float(max_cost), float(spent_before)
        self.cap_reached = False

    @property
    def spent(self) -> float:
        """USD recorded so far by the run: earlier sessions and this one."""
        return self.spent_before + self.stats.cost

    def _over_budget(self) -> LLMResult | None:
        # Checked by the client before every request it would send (after the response cache, once a
        # connection slot is free): cache hits stay free, and calls queued behind the limit are not made.
        if self.spent >= self.max_cost:
            if not self.cap_reached:
                log.info("spending cap of $%g reached ($%.4f spent): no new model calls", self.max_cost, self.spent)
            self.cap_reached = True
            raise SpendingCapReached(f"not asked: the spending cap of ${self.max_cost:g} was reached")
        return super()._over_budget()


def stopped_record(llm: LLM, max_cost: float | None) -> StopRecord | None:
    """What ``run.json`` keeps when the cap stopped the session (None when it did not)."""
    if not isinstance(llm, CappedLLM) or not llm.cap_reached:
        return None
    return StopRecord(reason="max_cost", max_cost=max_cost, spent=round(llm.spent, 6))
