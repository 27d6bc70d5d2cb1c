"""What the LLM layer is told (how calls are made) and what a call gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Generic, Literal, TypeVar

from annotated_doc import Doc
from annotated_types import Ge, Gt
from pydantic import BaseModel

from .accounting import Usage

T = TypeVar("T")


class LLMSettings(BaseModel):
    """How calls are made; none of this changes what a model answers, so none of it is cached on.

    The fields with a ``Doc`` are the options of every ``cc`` command that calls a model."""

    max_connections: Annotated[int, Ge(1), Doc("Concurrent requests per model.")] = 16
    requests_per_minute: Annotated[
        float | None, Ge(0), Doc("Requests per minute per model (default or 0: no limit).")
    ] = None
    tokens_per_minute: Annotated[float | None, Ge(0), Doc("Tokens per minute per model (default or 0: no limit).")] = (
        None
    )
    timeout: Annotated[float, Gt(0), Doc("Seconds per request before it is retried.")] = 60.0
    max_attempts: Annotated[int, Ge(1), Doc("HTTP attempts per call on 429/5xx/timeouts.")] = 6
    max_backoff: float = 60.0  # longest wait between attempts, in seconds
    max_reasks: int = 2  # re-asks after an answer fails validation
    max_answer_tokens: int = 4096  # an answer cut at N tokens is asked once more with max(2N, 1024) up to this
    cache: Annotated[
        bool, Doc("Read and write the response cache (--no-cache: neither; --cache turns it back on in a resume).")
    ] = True
    cache_path: Path | None = None  # default: <CC_CACHE_DIR>/responses.sqlite
    cost_limit: Annotated[float | None, Ge(0), Doc("Stop issuing calls once this many USD are spent.")] = None
    temperature: float = 0.0
    # Batch API (see .batch): requests missing from the cache go into batch files
    batch: Annotated[
        bool,
        Doc(
            "Send requests through the provider's Batch API (/v1/files + /v1/batches): about half the price, "
            "answers within 24 h; resumable. See the guide 'Batch mode and cc batches'."
        ),
    ] = False
    batch_fallback: Annotated[
        Literal["batch", "direct"],
        Doc("With --batch, where answers that failed validation are asked again: batch (a follow-up batch) or direct."),
    ] = "batch"
    batch_idle: float = 1.0  # seconds without a new request before a batch file is sent
    batch_poll: Annotated[float, Gt(0), Doc("With --batch, seconds before the first poll of a batch (then x1.5).")] = (
        5.0
    )
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
