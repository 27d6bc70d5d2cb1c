"""What the LLM layer is told (how calls are made) and what a call gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel

from .accounting import Usage

T = TypeVar("T")


class LLMSettings(BaseModel):
    """How calls are made; none of this changes what a model answers, so none of it is cached on."""

    max_connections: int = 16  # concurrent requests per model
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    timeout: float = 60.0  # seconds per request
    max_attempts: int = 6  # HTTP attempts per call (transient errors only)
    max_backoff: float = 60.0  # longest wait between attempts, in seconds
    max_reasks: int = 2  # re-asks after an answer fails validation
    max_answer_tokens: int = 4096  # an answer cut at N tokens is asked once more with max(2N, 1024) up to this
    cache: bool = True
    cache_path: Path | None = None  # default: <CC_CACHE_DIR>/responses.sqlite
    cost_limit: float | None = None  # USD; no new calls once spent
    temperature: float = 0.0
    # Batch API (see .batch): requests missing from the cache go into batch files
    batch: bool = False
    batch_fallback: Literal["batch", "direct"] = "batch"  # where re-asks go
    batch_idle: float = 1.0  # seconds without a new request before a batch file is sent
    batch_poll: float = 5.0  # first wait between polls of a batch (grows 1.5x a poll)
    batch_poll_max: float = 300.0
    batch_max_requests: int = 50_000  # per batch file (OpenAI's limit)
    batch_max_bytes: int = 200 * 1024 * 1024

    def width(self, concurrency: int, n: int) -> int:
        """How many of ``n`` items to work on at once: ``concurrency``, but in batch mode all of them,
        so that their requests wait for one batch together instead of trickling into many small ones."""
        return max(concurrency, n) if self.batch else concurrency


@dataclass
class LLMResult(Generic[T]):
    value: T | None
    error: str | None = None
    raw: str | None = None  # the model's text (tool arguments for structured calls)
    cache_hit: bool = False
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    attempts: int = 0
    truncated_at: int | None = None  # the answer was cut at this many tokens (finish_reason "length")

    @property
    def ok(self) -> bool:
        return self.error is None
