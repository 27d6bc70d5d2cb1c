"""One question to one model through the whole LLM layer (``cc ask``): the check that a setup works.

The answer comes with what a user checking a setup wants to see: the probability, the call's latency,
tokens and price, whether the cache served it, and the model's raw text when it could not be read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fields import Reasoning
from ..llm import LLM, LLMResult, RunStats
from ..llm.secrets import redact
from ..models import ForecastingQuestion
from .llm import BasicForecaster


@dataclass
class Answer:
    model: str
    result: LLMResult[Any]
    stats: RunStats

    @property
    def reasoning(self) -> str | None:
        return getattr(self.result.value, "reasoning", None) if self.result.ok else None

    def summary(self) -> dict[str, Any]:
        """What ``cc ask --json`` prints (the model spec redacted: a key written into its URL never shows)."""
        r = self.result
        return {
            "model": redact(self.model),
            "ok": r.ok,
            "prob": r.value.prob if r.ok else None,
            "reasoning": self.reasoning,
            "error": r.error,
            "raw": None if r.ok else r.raw,
            "cache_hit": r.cache_hit,
            "latency_s": round(r.latency, 3),
            "tokens": {"prompt": r.usage.prompt_tokens, "completion": r.usage.completion_tokens},
            "cost_usd": r.usage.cost,
            "calls": self.stats.calls,
            "retries": self.stats.retries,
        }

    def usage_line(self) -> str:
        """Model, latency, where the answer came from, tokens and price, in one line."""
        r, s = self.result, self.stats
        cost = "unknown price" if r.usage.cost is None or not _priced(self.model) else f"${r.usage.cost:.5f}"
        source = "cache" if r.cache_hit else f"{s.calls} call(s), {s.retries} retries"
        tokens = f"{r.usage.prompt_tokens}+{r.usage.completion_tokens} tokens"
        return f"{redact(self.model)}: {r.latency:.2f}s, {source}, {tokens}, {cost}"


async def ask(llm: LLM, model: str, question: ForecastingQuestion, reasoning: Reasoning = None) -> Answer:
    """``question`` asked of ``model`` as ``cc evaluate``'s basic forecaster asks it, once."""
    messages, schema = BasicForecaster(model, reasoning=reasoning).request(question)
    result = await llm.structured(model, messages, schema)
    return Answer(model, result, llm.stats)


def _priced(model: str) -> bool:
    """Whether the price table knows ``model``: a cache hit costs nothing, but for an unpriced model that
    is still "unknown price", as for the call that filled the cache, not ``$0.00000``."""
    from ..llm.accounting import price_table
    from ..llm.specs import parse_model_spec

    return parse_model_spec(model).model in price_table()
