"""The LLM options every command that calls a model shares (declared once, reused by each)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..llm import LLMSettings
from .bounds import positive

MaxConnections = Annotated[int, typer.Option("--max-connections", min=1, help="Concurrent requests per model.")]
RequestsPerMinute = Annotated[
    float | None, typer.Option("--rpm", min=0, help="Requests per minute per model (default or 0: no limit).")
]
TokensPerMinute = Annotated[
    float | None, typer.Option("--tpm", min=0, help="Tokens per minute per model (default or 0: no limit).")
]
Timeout = Annotated[
    float, typer.Option("--timeout", min=0, callback=positive, help="Seconds per request before it is retried.")
]
MaxAttempts = Annotated[int, typer.Option("--max-attempts", min=1, help="HTTP attempts per call on 429/5xx/timeouts.")]
NoCache = Annotated[
    bool,
    typer.Option(
        "--no-cache/--cache", help="Neither read nor write the response cache (--cache: use it, e.g. on a resume)."
    ),
]
CostLimit = Annotated[
    float | None, typer.Option("--cost-limit", min=0, help="Stop issuing calls once this many USD are spent.")
]

Batch = Annotated[
    bool,
    typer.Option(
        "--batch",
        help="Send requests through the provider's Batch API (/v1/files + /v1/batches): about half the price, "
        "answers within 24 h; resumable. See the guide 'Batch mode and cc batches'.",
    ),
]
BatchFallback = Annotated[
    str,
    typer.Option(
        "--batch-fallback",
        help="With --batch, where answers that failed validation are asked again: batch (a follow-up batch) or direct.",
    ),
]
BatchPoll = Annotated[
    float,
    typer.Option(
        "--batch-poll",
        min=0,
        callback=positive,
        help="With --batch, seconds before the first poll of a batch (then x1.5).",
    ),
]


def settings(
    max_connections: int = 16,
    rpm: float | None = None,
    tpm: float | None = None,
    timeout: float = 60.0,
    max_attempts: int = 6,
    no_cache: bool = False,
    cost_limit: float | None = None,
    batch: bool = False,
    batch_fallback: str = "batch",
    batch_poll: float = 5.0,
) -> LLMSettings:
    if batch_fallback not in ("batch", "direct"):
        raise typer.BadParameter(f"--batch-fallback must be 'batch' or 'direct', not {batch_fallback!r}")
    return LLMSettings(
        max_connections=max_connections,
        requests_per_minute=rpm,
        tokens_per_minute=tpm,
        timeout=timeout,
        max_attempts=max_attempts,
        cache=not no_cache,
        cost_limit=cost_limit,
        batch=batch,
        batch_fallback=batch_fallback,  # type: ignore[arg-type]
        batch_poll=batch_poll,
    )
