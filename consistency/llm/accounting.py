"""Tokens, costs and transcripts: what every call used, what a run spent, what was said."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field, fields
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..jsonl import cut_torn_tail
from .secrets import redact


@lru_cache(maxsize=1)
def price_table() -> dict[str, dict[str, float]]:
    """USD per million tokens, from our table and the user's ``CC_PRICES`` file (which wins)."""
    table = json.loads(files(__package__).joinpath("prices.json").read_text(encoding="utf-8"))
    extra = os.environ.get("CC_PRICES")
    if extra:
        table.update(json.loads(Path(extra).expanduser().read_text(encoding="utf-8")))
    return {k: v for k, v in table.items() if not k.startswith("_")}


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int, batch: bool = False) -> float | None:
    """USD of a response; ``batch``: answered through a Batch API (its own prices, else the direct ones)."""
    price = price_table().get(model)
    if price is None:
        return None
    prompt, completion = price["input"], price["output"]
    if batch:
        prompt, completion = price.get("batch_input", prompt), price.get("batch_output", completion)
    return (prompt_tokens * prompt + completion_tokens * completion) / 1e6


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    @classmethod
    def of(cls, model: str, usage: Any, batch: bool = False) -> Usage:
        if usage is None:
            return cls()
        p = int(getattr(usage, "prompt_tokens", None) or 0)
        c = int(getattr(usage, "completion_tokens", None) or 0)
        return cls(p, c, cost_usd(model, p, c, batch))


@dataclass
class RunStats:
    """Totals of one run; updated from the event loop (and thread-safe for other readers)."""

    calls: int = 0  # requests that reached the network, retries included
    cache_hits: int = 0
    failures: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    unpriced_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, usage: Usage) -> None:
        with self._lock:
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            if usage.cost is None:
                self.unpriced_calls += 1
            else:
                self.cost += usage.cost

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def text(self) -> str:
        """Calls, cache hits, retries, failures, tokens and cost in one line (what a command says at its end)."""
        cost = f"${self.cost:.4f}" + (f" (+{self.unpriced_calls} unpriced calls)" if self.unpriced_calls else "")
        return (
            f"LLM: {self.calls} calls, {self.cache_hits} cache hits, {self.retries} retries, {self.failures} failures; "
            f"{self.prompt_tokens}+{self.completion_tokens} tokens; {cost}"
        )


class Transcript:
    """``llm_calls.jsonl``: one line per call, secrets scrubbed, appended as calls finish."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        cut_torn_tail(self.path)  # a line torn by a kill or a refused write: the next one starts clean

    def write(self, record: dict[str, Any]) -> None:
        """Append one line; an OSError (full disk, file-size limit...) names the transcript."""
        line = redact(json.dumps(record, ensure_ascii=False, default=str)) + "\n"
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
        except OSError as exc:
            if exc.filename is not None:
                raise
            raise type(exc)(exc.errno, exc.strerror or str(exc), str(self.path)) from exc
