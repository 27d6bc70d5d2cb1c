"""``cc questions``: base questions from a topic, around a source question, from bare titles; and their verification."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated

import typer

from ..embeddings import make_embedder
from ..questions import QuestionReport, Window, build_questions, related_titles, synthetic_titles, verify_questions
from .console import err, escape, out
from .generate_cmd import load_questions
from .llm_command import LLMArgs, llm_command, print_usage, run_calls, shared_options

app = typer.Typer(help="Make and check base questions for a benchmark.", no_args_is_help=True)

Out = Annotated[Path, typer.Option("--out", "-o", help="Questions JSONL (appended; rerun to resume).")]
Created = Annotated[str | None, typer.Option("--created", help="Creation date of the questions (default: today).")]
ResolveBy = Annotated[str, typer.Option("--resolve-by", help="Latest resolution date (YYYY-MM-DD).")]
Count = Annotated[int, typer.Option("-n", help="How many questions to make.")]
Verify = Annotated[bool, typer.Option("--verify/--no-verify", help="Verify each new question with the model.")]
Threshold = Annotated[int, typer.Option(help="Verification score (0-10) a question needs to be kept.")]
Examples = Annotated[Path | None, typer.Option(help="Questions JSONL whose titles serve as style examples.")]
Embeddings = Annotated[str, typer.Option(help="Title de-duplication: auto, lexical, minilm or a model spec.")]
Dedupe = Annotated[float, typer.Option(help="Titles at least this similar (cosine) to a kept one are dropped.")]


@dataclass
class Making:
    """How new questions are made: their dates, de-duplication and verification."""

    window: Window
    verify: bool
    threshold: int


@dataclass
class Titling:
    n: int
    embeddings: str
    dedupe: float


making_options = shared_options(
    {"created": (Created, None), "resolve_by": (ResolveBy, "2028-01-01"), "verify": (Verify, True),
     "threshold": (Threshold, 6)},
    "making",
    lambda v: Making(_window(v["created"], v["resolve_by"]), v["verify"], v["threshold"]),
)  # fmt: skip
titling_options = shared_options(
    {"n": (Count, 10), "embeddings": (Embeddings, "auto"), "dedupe": (Dedupe, 0.9)}, "titling", lambda v: Titling(**v)
)


def _window(created: str | None, resolve_by: str) -> Window:
    try:
        window = Window(date.fromisoformat(created) if created else date.today(), date.fromisoformat(resolve_by))
    except ValueError as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if window.resolve_by <= window.created:
        err.print("[red]error[/red] --resolve-by must be after --created")
        raise typer.Exit(2)
    return window


def _report(report: QuestionReport) -> None:
    out.print(
        f"{report.written} new question(s) in {escape(str(report.path))}"
        + (f" ({report.already} from an earlier run)" if report.already else "")
    )
    for step, count in sorted(report.rejected.items()):
        out.print(f"  rejected at {escape(step)}: {count} (reasons in {escape(str(report.rejects_path))})")


async def _complete(titles_of, out_path: Path, making: Making, meta: dict, llm_args: LLMArgs) -> QuestionReport:
    async with llm_args.client() as llm:
        titles = await titles_of(llm)
        err.print(f"{len(titles)} distinct title(s); writing bodies and resolution dates")
        judge = llm_args.model if making.verify else None
        report = await build_questions(titles, out_path, llm, llm_args.model, making.window, verifier_model=judge,
                                       threshold=making.threshold, metadata=meta)  # fmt: skip
    print_usage(llm.stats)
    return report


@app.command("synth")
@llm_command
@making_options
@titling_options
def synth(
    category: Annotated[str, typer.Option(help="Topic of the questions, e.g. Economics.")],
    tags: Annotated[str, typer.Option(help="Comma-separated tags to diversify them (Brazil,NBA,...).")],
    out_path: Out,
    examples: Examples = None,
    *,
    titling: Titling,
    making: Making,
    llm_args: LLMArgs,
) -> None:
    """Synthetic questions for a category and tags: titles, de-duplicated, then bodies and resolution dates."""
    shots = load_questions(examples) if examples else []
    tag_list = [t.strip() for t in tags.split(",") if t.strip()]

    async def titles_of(llm):
        return await synthetic_titles(llm, llm_args.model, category=category, tags=tag_list, examples=shots,
                                      created=str(making.window.created), resolve_by=str(making.window.resolve_by),
                                      n=titling.n, embedder=make_embedder(titling.embeddings, llm),
                                      threshold=titling.dedupe)  # fmt: skip

    meta = {"category": category, "tags": tag_list}
    _report(run_calls(_complete(titles_of, out_path, making, meta, llm_args)))


@app.command("related")
@llm_command
@making_options
@titling_options
def related(
    questions: Annotated[Path, typer.Option("--questions", "-q", help="JSONL holding the source question.")],
    source_id: Annotated[str, typer.Option("--source-id", help="Id of the source question.")],
    out_path: Out,
    *,
    titling: Titling,
    making: Making,
    llm_args: LLMArgs,
) -> None:
    """Questions related to one source question (appendix J); then `cc generate --around ID`."""
    pool = load_questions(questions)
    source = next((q for q in pool if q.id == source_id), None)
    if source is None:
        err.print(f"[red]error[/red] no question with id {escape(source_id)} in {escape(str(questions))}")
        raise typer.Exit(2)

    async def titles_of(llm):
        embedder = make_embedder(titling.embeddings, llm)
        resolve_by = str(making.window.resolve_by)
        return await related_titles(
            llm, llm_args.model, source, examples=pool, resolve_by=resolve_by, n=titling.n, embedder=embedder,
            threshold=titling.dedupe,
        )  # fmt: skip

    _report(run_calls(_complete(titles_of, out_path, making, {"source_id": source_id}, llm_args)))


@app.command("fill")
@llm_command
@making_options
def fill(
    titles: Annotated[Path, typer.Option("--titles", help="Text file, one question title per line.")],
    out_path: Out,
    *,
    making: Making,
    llm_args: LLMArgs,
) -> None:
    """Bodies (resolution criteria) and resolution dates for questions given as titles only."""
    try:
        lines = [t.strip() for t in titles.read_text(encoding="utf-8").splitlines() if t.strip()]
    except OSError as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None

    async def titles_of(llm):
        return lines

    _report(run_calls(_complete(titles_of, out_path, making, {}, llm_args)))


@app.command("verify")
@llm_command
def verify_cmd(
    questions: Annotated[Path, typer.Option("--questions", "-q", help="Questions JSONL to check.")],
    out_path: Out,
    threshold: Threshold = 6,
    *,
    llm_args: LLMArgs,
) -> None:
    """Keep questions that are clear, coherent, precisely resolvable and about real events (score >= threshold)."""
    pool = load_questions(questions)

    async def run():
        async with llm_args.client() as llm:
            report = await verify_questions(pool, out_path, llm, llm_args.model, threshold)
        print_usage(llm.stats)
        return report

    _report(run_calls(run()))
