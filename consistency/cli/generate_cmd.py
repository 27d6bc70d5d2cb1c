"""``cc generate``: consistency tuples from base questions, appended to ``<out>/<Checker>.jsonl``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from ..generate.chains import NO_HORIZON
from ..generate.pipeline import GenerateOptions, GenerateReport
from ..generate.run import Makers, around_question, choose_checks, choose_makers, generate_checks, shortfall
from ..llm import LLM
from .console import err, escape, out, questions_of
from .errors import SAVED, handle_errors
from .exits import ExitCode
from .llm_command import LLMArgs, llm_command
from .progress import Progress


class InstantiatorChoice(StrEnum):
    auto = "auto"
    llm = "llm"
    template = "template"


class RelevanceChoice(StrEnum):
    auto = "auto"
    llm = "llm"
    embeddings = "embeddings"
    off = "off"


@handle_errors(after=SAVED)
@llm_command
def generate_cmd(
    check: Annotated[
        str,
        typer.Option(
            "--check", "-c", help="Check name or alias (neg, cond, mono, ...), a comma-separated list, or 'all'."
        ),
    ],
    questions: Annotated[Path, typer.Option("--questions", "-q", help="Base questions (JSONL, one per line).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory for <Checker>.jsonl and rejects/.")],
    n: Annotated[
        int, typer.Option("-n", min=1, help="Tuples wanted per check (those already in the file count).")
    ] = 50,
    instantiator: Annotated[
        InstantiatorChoice, typer.Option(help="llm writes fields with the model; template is exact and model-free.")
    ] = InstantiatorChoice.auto,
    verify: Annotated[
        bool | None, typer.Option("--verify/--no-verify", help="Have a model verify each tuple (default: with llm).")
    ] = None,
    threshold: Annotated[int, typer.Option(min=0, max=10, help="Verifier score (0-10) a tuple needs to be kept.")] = 6,
    verifier_model: Annotated[
        str | None, typer.Option("--verifier-model", help="Model for verification and relevance (default: --model).")
    ] = None,
    relevance: Annotated[
        RelevanceChoice, typer.Option(help="How multi-question bases are ranked (auto: llm with the llm instantiator).")
    ] = RelevanceChoice.auto,
    candidates: Annotated[int, typer.Option(min=1, help="Base assignments sampled for multi-question checks.")] = 2000,
    prefilter: Annotated[
        int | None,
        typer.Option(min=0, help="Kept by embedding similarity before the model scores (default 3 x (top or n))."),
    ] = None,
    top: Annotated[
        int | None,
        typer.Option(min=1, help="Best-ranked candidates used (default: down the ranking until n are kept)."),
    ] = None,
    embeddings: Annotated[
        str, typer.Option(help="auto, lexical, minilm, or an embeddings model spec (openai/text-embedding-3-small).")
    ] = "auto",
    around: Annotated[
        str | None, typer.Option(help="Id of a question in --questions that every tuple must contain (appendix J).")
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the candidate sampling.")] = 0,
    *,
    llm_args: LLMArgs,
) -> None:
    """Generate consistency tuples from base questions (resumable: rerun the same command to continue)."""
    checks = choose_checks(check)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir} is a file, not a directory: --out takes a directory")
    pool = questions_of(questions)
    source = around_question(pool, around, questions) if around is not None else None
    makers, why = choose_makers(llm_args.model, instantiator.value, verify, threshold, verifier_model, relevance.value,
                                embeddings)  # fmt: skip
    if why:
        err.print(f"instantiator: [bold]{makers.instantiator}[/bold] ({why}; pass --instantiator to choose)")
    options = GenerateOptions(
        n=n, candidates=candidates, top=top, prefilter=prefilter, seed=seed, around=source,
        concurrency=llm_args.settings.width(llm_args.values["max_connections"], n),
    )  # fmt: skip
    reports, skipped = llm_args.run(lambda llm: _run(checks, pool, out_dir, options, makers, llm))
    for report in reports:
        _print_report(report)
        short = shortfall(report, options, len(pool))
        if short:
            err.print(f"[yellow]{escape(short)}[/yellow]")
    for name, reason in skipped:  # e.g. fewer base questions than the check needs
        err.print(f"[yellow]{escape(name)}: not generated: {escape(reason)}[/yellow]")
    if not any(r.total for r in reports):
        raise typer.Exit(ExitCode.USAGE if skipped and not reports else ExitCode.FAILED)


async def _run(checks, pool, out_dir: Path, options: GenerateOptions, makers: Makers, llm: LLM):
    with Progress() as progress:

        def track(check):
            task = progress.task(check.class_name, total=options.n)

            def show(r: GenerateReport) -> None:
                rejected = sum(v for k, v in r.rejected.items() if not k.startswith("relevance"))
                skipped = f", {r.skipped} skipped" if r.skipped else ""
                task.update(completed=r.total, info=f"{rejected} rejected{skipped}, {llm.stats.calls} calls")

            return show

        return await generate_checks(checks, pool, out_dir, options, makers, llm, track)


def _print_report(report: GenerateReport) -> None:
    out.print(
        f"[bold]{report.check}[/bold]: {report.written} new tuple(s), {report.total} in {escape(str(report.path))}"
        + (f" ({report.already} from an earlier run)" if report.already else "")
        + f"; {report.candidates} candidate base assignment(s)"
    )
    if report.skipped:
        out.print(f"  skipped {report.skipped} question(s): {escape(NO_HORIZON)}")
    for step, count in sorted(report.rejected.items()):
        if count:
            out.print(f"  rejected at {escape(step)}: {count}")
    if report.skipped or any(not k.startswith("relevance") and v for k, v in report.rejected.items()):
        out.print(f"  reasons: {escape(str(report.rejects_path))}")
