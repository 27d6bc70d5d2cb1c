"""``cc ask``: one question to one model through the whole LLM layer, to check a setup works."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from .. import fields
from .console import err, escape, out, say
from .declared import option
from .exits import ExitCode
from .llm_command import LLMArgs, llm_command, run_calls
from .options import AsJson

if TYPE_CHECKING:
    from ..forecasters.asking import Answer


@llm_command
def ask(
    title: Annotated[str, typer.Argument(help="The question, e.g. 'Will X happen before 2030?'")],
    body: Annotated[str, typer.Option("--body", help="Resolution criteria shown with the question.")] = "",
    as_json: AsJson = False,
    reasoning: option(fields.Reasoning, "--reasoning/--no-reasoning", show_default=False) = None,
    *,
    llm_args: LLMArgs,
) -> None:
    """Ask a model for the probability that a question resolves YES."""
    from ..forecasters.asking import ask as ask_model
    from ..models import ForecastingQuestion

    async def run() -> Answer:
        async with llm_args.client() as llm:
            return await ask_model(llm, llm_args.model, ForecastingQuestion(title=title, body=body), reasoning)

    answer = run_calls(run())
    result = answer.result
    if as_json:
        out.print_json(json.dumps(answer.summary()))
    elif result.ok:
        out.print(f"[bold]{result.value.prob:.3f}[/bold]  {escape(answer.reasoning or '')}".rstrip())
        say([answer.usage_line()])
    else:
        err.print(f"[red]failed[/red]: {escape(result.error or '')}")
        if result.raw:
            err.print(f"raw answer: {escape(result.raw[:500])}")
    if not result.ok:
        raise typer.Exit(ExitCode.FAILED)
