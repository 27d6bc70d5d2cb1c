"""``cc generate``: consistency tuples from base questions, appended to ``<out>/<Checker>.jsonl``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..checks import Check, UnknownCheckError, all_checks, get_check
from ..embeddings import make_embedder
from ..generate import TemplateInstantiator
from ..generate.chains import NO_HORIZON
from ..generate.llm import LLMInstantiator
from ..generate.pipeline import GenerateOptions, GenerateReport, generate
from ..generate.relevance import RelevanceRanker
from ..generate.verify import TupleVerifier
from ..jsonl import read_jsonl
from ..models import ForecastingQuestion
from .console import err, escape, out
from .exits import ExitCode
from .llm_command import LLMArgs, llm_command, print_usage, run_calls
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


def load_questions(path: Path) -> list[ForecastingQuestion]:
    """Questions from JSONL; a bad line, or no question at all, stops the command with one message."""
    from ..sources.paper import DatasetRefError, dataset_path  # paper:NAME and hf:// references → local files

    questions, problems, first_line = [], [], {}
    try:
        path = dataset_path(path)
        for number, parsed in read_jsonl(path, ForecastingQuestion):
            if isinstance(parsed, list):
                problems.extend(str(e) for e in parsed)
            elif parsed.id in first_line:  # a repeated id: warned about, the first question kept
                err.print(
                    f"[yellow]warning[/yellow] {escape(str(path))}:{number}: id {escape(parsed.id)} repeats line "
                    f"{first_line[parsed.id]}; the first is kept"
                )
            else:
                first_line[parsed.id] = number
                questions.append(parsed)
    except (OSError, DatasetRefError) as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from None
    if problems:
        for problem in problems[:20]:
            err.print(f"[red]error[/red] {escape(problem)}")
        raise typer.Exit(ExitCode.USAGE)
    if not questions:
        err.print(f"[red]error[/red] {escape(str(path))}: no questions (the file is empty)")
        raise typer.Exit(ExitCode.USAGE)
    return questions


def choose_instantiator(choice: InstantiatorChoice, llm_args: LLMArgs) -> str:
    if choice != InstantiatorChoice.auto:
        return choice.value
    from ..llm.secrets import redact

    chosen = "llm" if llm_args.hosted else "template"
    why = f"model {redact(llm_args.model)} is hosted" if llm_args.hosted else "the only model is the bundled local one"
    err.print(f"instantiator: [bold]{chosen}[/bold] ({why}; pass --instantiator to choose)")
    return chosen


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
    try:
        checks = choose_checks(check)
    except KeyError as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from None
    if out_dir.exists() and not out_dir.is_dir():
        err.print(f"[red]error[/red] {escape(str(out_dir))} is a file, not a directory: --out takes a directory")
        raise typer.Exit(ExitCode.USAGE)
    pool = load_questions(questions)
    source = None
    if around is not None:
        source = next((q for q in pool if q.id == around), None)
        if source is None:
            err.print(f"[red]error[/red] no question with id {escape(around)} in {escape(str(questions))}")
            raise typer.Exit(ExitCode.USAGE)
    kind = choose_instantiator(instantiator, llm_args)
    verify = kind == "llm" if verify is None else verify
    rel = relevance.value if relevance != RelevanceChoice.auto else ("llm" if kind == "llm" else "embeddings")
    options = GenerateOptions(
        n=n, candidates=candidates, top=top, prefilter=prefilter, seed=seed, around=source,
        concurrency=llm_args.settings.width(llm_args.values["max_connections"], n),
    )  # fmt: skip
    plan = Plan(kind, verify, threshold, verifier_model or llm_args.model, rel, embeddings, out_dir, options)
    reports, skipped = run_calls(_run(checks, pool, plan, llm_args))
    for report in reports:
        _print_report(report)
        short = shortfall(report, options, len(pool))
        if short:
            err.print(f"[yellow]{escape(short)}[/yellow]")
    for name, reason in skipped:  # e.g. fewer base questions than the check needs
        err.print(f"[yellow]{escape(name)}: not generated: {escape(reason)}[/yellow]")
    if not any(r.total for r in reports):
        if skipped and not reports:
            raise typer.Exit(ExitCode.USAGE)
        raise typer.Exit(ExitCode.FAILED)


def choose_checks(spec: str) -> list[Check]:
    """``all``, one name, or a comma-separated list (``neg,cond``), in the order given, without repeats."""
    names = [part.strip() for part in spec.replace(";", ",").split(",") if part.strip()]
    if not names:
        raise UnknownCheckError("--check names no check (give a name such as neg, a list such as neg,cond, or all)")
    if any(name.lower() == "all" for name in names):
        return list(all_checks())
    return list({c.name: c for c in (get_check(name) for name in names)}.values())


def shortfall(report: GenerateReport, options: GenerateOptions, questions: int) -> str | None:
    """One sentence when fewer tuples than asked were made, saying which limit was reached (None: enough)."""
    if report.total >= options.n:
        return None
    why = []
    cut = report.rejected.get("relevance: below the embedding prefilter", 0)
    if cut:
        kept = report.candidates - cut
        why.append(f"the relevance prefilter kept {kept} of {report.candidates} candidates (3 x n unless --prefilter)")
    if report.rejected.get("relevance: not in the top", 0):
        why.append(f"--top {options.top} kept only the best {options.top}")
    failures = report.rejected.get("relevance: scoring failed", 0)
    if failures:
        why.append(f"{failures} relevance scoring(s) failed")
    rejected = sum(v for k, v in report.rejected.items() if not k.startswith("relevance"))
    if rejected:
        why.append(f"{rejected} made this run were rejected (reasons in {report.rejects_path})")
    if report.skipped:
        why.append(f"{report.skipped} skipped: {NO_HORIZON} (--instantiator llm writes chains for others)")
    if not cut and not report.rejected.get("relevance: not in the top", 0):
        why.append(
            f"only {report.candidates} candidate base assignment(s) from {questions} question(s) "
            "(give more questions, or --candidates)"
        )
    return f"{report.check}: {report.total} of the {options.n} tuples asked for; the candidates ran out: " + "; ".join(
        why
    )


@dataclass
class Plan:
    instantiator: str
    verify: bool
    threshold: int
    judge: str  # model that verifies and scores relevance
    relevance: str
    embeddings: str
    out_dir: Path
    options: GenerateOptions


async def _run(checks: list[Check], pool: list[ForecastingQuestion], plan: Plan, llm_args: LLMArgs):
    """The reports of the checks generated, and (check, reason) for those that could not be."""
    reports, skipped = [], []
    async with llm_args.client() as llm:
        inst = LLMInstantiator(llm, llm_args.model) if plan.instantiator == "llm" else TemplateInstantiator()
        verifier = TupleVerifier(llm, plan.judge, plan.threshold) if plan.verify else None
        scorer = (llm, plan.judge) if plan.relevance == "llm" else (None, None)
        with Progress() as progress:
            for check in checks:
                ranker = None
                if plan.relevance != "off":
                    ranker = RelevanceRanker(make_embedder(plan.embeddings, llm), *scorer)
                task = progress.task(check.class_name, total=plan.options.n)

                def show(r: GenerateReport, task=task) -> None:
                    rejected = sum(v for k, v in r.rejected.items() if not k.startswith("relevance"))
                    skipped = f", {r.skipped} skipped" if r.skipped else ""
                    task.update(completed=r.total, info=f"{rejected} rejected{skipped}, {llm.stats.calls} calls")

                try:
                    report = await generate(
                        check,
                        pool,
                        inst,
                        plan.out_dir,
                        plan.options,
                        ranker=ranker,
                        verifier=verifier,
                        on_progress=show,
                    )
                except ValueError as exc:  # e.g. fewer base questions than the check needs: the others go on
                    task.update(info="skipped")
                    skipped.append((check.name, str(exc)))
                    continue
                reports.append(report)
    print_usage(llm.stats)
    return reports, skipped


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
