"""``cc ask``: one question to one model through the whole LLM layer, to check a setup works."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer

from ..forecasters.llm import ForecastAnswer, forecast_messages
from ..llm import LLM
from ..models import ForecastingQuestion
from . import llm_options as opt
from .console import err, escape, out


def ask(
    title: Annotated[str, typer.Argument(help="The question, e.g. 'Will X happen before 2030?'")],
    model: Annotated[
        str, typer.Option("--model", "-m", help="Model spec: gpt-4o, openrouter/..., URL::model, local.")
    ] = "local",
    body: Annotated[str, typer.Option("--body", help="Resolution criteria shown with the question.")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    max_connections: opt.MaxConnections = 16,
    rpm: opt.RequestsPerMinute = None,
    tpm: opt.TokensPerMinute = None,
    timeout: opt.Timeout = 60.0,
    max_attempts: opt.MaxAttempts = 6,
    no_cache: opt.NoCache = False,
    cost_limit: opt.CostLimit = None,
) -> None:
    """Ask a model for the probability that a question resolves YES."""
    question = ForecastingQuestion(title=title, body=body)
    messages = forecast_messages(question)
    settings = opt.settings(max_connections, rpm, tpm, timeout, max_attempts, no_cache, cost_limit)

    async def run():
        async with LLM(settings) as llm:
            return await llm.structured(model, messages, ForecastAnswer), llm.stats

    result, stats = asyncio.run(run())
    summary = {
        "model": model,
        "ok": result.ok,
        "prob": result.value.prob if result.ok else None,
        "reasoning": result.value.reasoning if result.ok else None,
        "error": result.error,
        "raw": None if result.ok else result.raw,
        "cache_hit": result.cache_hit,
        "latency_s": round(result.latency, 3),
        "tokens": {"prompt": result.usage.prompt_tokens, "completion": result.usage.completion_tokens},
        "cost_usd": result.usage.cost,
        "calls": stats.calls,
        "retries": stats.retries,
    }
    if as_json:
        out.print_json(json.dumps(summary))
    elif result.ok:
        out.print(f"[bold]{result.value.prob:.3f}[/bold]  {escape(result.value.reasoning)}")
        cost = "unknown price" if result.usage.cost is None else f"${result.usage.cost:.5f}"
        source = "cache" if result.cache_hit else f"{stats.calls} call(s), {stats.retries} retries"
        err.print(
            f"{escape(model)}: {result.latency:.2f}s, {source}, "
            f"{result.usage.prompt_tokens}+{result.usage.completion_tokens} tokens, {cost}"
        )
    else:
        err.print(f"[red]failed[/red]: {escape(result.error or '')}")
        if result.raw:
            err.print(f"raw answer: {escape(result.raw[:500])}")
    if not result.ok:
        raise typer.Exit(1)
