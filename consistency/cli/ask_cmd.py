"""``cc ask``: one question to one model through the whole LLM layer, to check a setup works."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ..forecasters.llm import BasicForecaster
from ..models import ForecastingQuestion
from .console import err, escape, out
from .exits import ExitCode
from .llm_command import LLMArgs, llm_command, run_calls
from .options import AsJson


@llm_command
def ask(
    title: Annotated[str, typer.Argument(help="The question, e.g. 'Will X happen before 2030?'")],
    body: Annotated[str, typer.Option("--body", help="Resolution criteria shown with the question.")] = "",
    as_json: AsJson = False,
    reasoning: Annotated[
        bool | None,
        typer.Option(
            "--reasoning/--no-reasoning",
            help="Ask for a justification with the probability. Default: as `cc evaluate`'s basic forecaster "
            "(yes, except for the bundled local model).",
            show_default=False,
        ),
    ] = None,
    *,
    llm_args: LLMArgs,
) -> None:
    """Ask a model for the probability that a question resolves YES."""
    from ..llm.secrets import redact  # a key written into the spec's URL is never printed

    question = ForecastingQuestion(title=title, body=body)
    model = llm_args.model
    messages, schema = BasicForecaster(model, reasoning=reasoning).request(question)

    async def run():
        async with llm_args.client() as llm:
            return await llm.structured(model, messages, schema), llm.stats

    result, stats = run_calls(run())
    summary = {
        "model": redact(model),
        "ok": result.ok,
        "prob": result.value.prob if result.ok else None,
        "reasoning": getattr(result.value, "reasoning", None) if result.ok else None,
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
        out.print(f"[bold]{result.value.prob:.3f}[/bold]  {escape(getattr(result.value, 'reasoning', ''))}".rstrip())
        cost = "unknown price" if result.usage.cost is None or not _priced(model) else f"${result.usage.cost:.5f}"
        source = "cache" if result.cache_hit else f"{stats.calls} call(s), {stats.retries} retries"
        err.print(
            f"{escape(redact(model))}: {result.latency:.2f}s, {source}, "
            f"{result.usage.prompt_tokens}+{result.usage.completion_tokens} tokens, {cost}"
        )
    else:
        err.print(f"[red]failed[/red]: {escape(result.error or '')}")
        if result.raw:
            err.print(f"raw answer: {escape(result.raw[:500])}")
    if not result.ok:
        raise typer.Exit(ExitCode.FAILED)


def _priced(model: str) -> bool:
    """Whether the price table knows ``model``: a cache hit costs nothing, but for an unpriced model that
    is still "unknown price", as for the call that filled the cache, not ``$0.00000``."""
    from ..llm.accounting import price_table
    from ..llm.specs import parse_model_spec

    return parse_model_spec(model).model in price_table()
