"""``cc generate``: consistency tuples from base questions, appended to ``<out>/<Checker>.jsonl``."""

from __future__ import annotations

from typing import Any

import typer

from ..generate.options import AroundId, CheckSpec, GenerateSettings, OutDir, QuestionsFile, choose_makers
from .console import err, escape, out, questions_of, say
from .declared import option, options_from
from .errors import SAVED, handle_errors
from .exits import ExitCode
from .llm_command import LLMArgs, llm_command


@handle_errors(after=SAVED)
@llm_command
@options_from(choose_makers, "choice", flags={"verify": "--verify/--no-verify"}, build=dict)
@options_from(GenerateSettings, "settings", flags={"n": "-n"}, build=dict)
def generate_cmd(
    check: option(CheckSpec, "--check", "-c"),
    questions: option(QuestionsFile, "--questions", "-q"),
    out_dir: option(OutDir, "--out", "-o"),
    around: option(AroundId, "--around") = None,
    *,
    settings: dict[str, Any],
    choice: dict[str, Any],
    llm_args: LLMArgs,
) -> None:
    """Generate consistency tuples from base questions (resumable: rerun the same command to continue)."""
    from ..generate.pipeline import GenerateOptions
    from ..generate.run import around_question, choose_checks, out_directory, shortfall

    checks, out_dir = choose_checks(check), out_directory(out_dir)
    pool = questions_of(questions)
    source = around_question(pool, around, questions)
    makers, why = choose_makers(llm_args.model, **choice)
    if why:
        err.print(f"instantiator: [bold]{makers.instantiator}[/bold] ({why}; pass --instantiator to choose)")
    width = llm_args.settings.width(llm_args.settings.max_connections, settings["n"])
    options = GenerateOptions(**settings, around=source, concurrency=width)
    reports, skipped = llm_args.run(lambda llm: _run(checks, pool, out_dir, options, makers, llm))
    for report in reports:
        say(report.lines(), out)
        say(filter(None, [shortfall(report, options, len(pool))]))
    for name, reason in skipped:  # e.g. fewer base questions than the check needs
        err.print(f"[yellow]{escape(name)}: not generated: {escape(reason)}[/yellow]")
    if not any(r.total for r in reports):
        raise typer.Exit(ExitCode.USAGE if skipped and not reports else ExitCode.FAILED)


async def _run(checks, pool, out_dir, options, makers, llm):
    from ..generate.run import generate_checks
    from .progress import Progress

    with Progress() as progress:

        def track(check):
            task = progress.task(check.class_name, total=options.n)

            def show(r) -> None:
                task.update(completed=r.total, info=f"{r.progress_text()}, {llm.stats.calls} calls")

            return show

        return await generate_checks(checks, pool, out_dir, options, makers, llm, track)
