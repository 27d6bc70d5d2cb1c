"""``cc questions``: base questions from a topic, around a source question, from bare titles, from platforms
and news; their verification and resolution."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer

from ..questions import verify_questions
from ..questions.making import Making, NewsSources, Titles, Titling, Topic, complete, day, given, synthetic
from ..questions.making import related as related_to
from ..questions.news import questions_from_news
from ..sources.request import ScrapeFilters, ScrapePoliteness, scrape_request
from ..sources.resolve import resolve_questions
from ..store.layout import resolved_file
from .console import err, out, questions_of, say
from .declared import options_from
from .errors import SAVED, handle_errors
from .llm_command import LLMArgs, llm_command

app = typer.Typer(help="Make and check base questions for a benchmark.", no_args_is_help=True)


def _file_out(path: Path | None) -> Path | None:
    """--out names a file: a directory there is one clear error before any work (not a traceback after it)."""
    if path is not None and path.is_dir():
        raise typer.BadParameter(f"{path} is a directory; give a JSONL file")
    return path


Out = Annotated[
    Path, typer.Option("--out", "-o", help="Questions JSONL (appended; rerun to resume).", callback=_file_out)
]
Examples = Annotated[Path | None, typer.Option(help="Questions JSONL whose titles serve as style examples.")]

making_options = options_from(Making.dated, "making")
titling_options = options_from(Titling, "titling", flags={"n": "-n"})


def _make(titles_of, out_path: Path, making: Making, llm_args: LLMArgs, metadata: dict | None = None) -> None:
    """Titles, then bodies and resolution dates (and verification), with the model's usage said at the end."""

    def said(count: int) -> None:
        err.print(f"{count} distinct title(s); writing bodies and resolution dates")

    report = llm_args.run(
        lambda llm: complete(titles_of, out_path, llm, llm_args.model, making, metadata, on_titles=said)
    )
    say(report.lines(), out)


@app.command("synth")
@handle_errors(after=SAVED)
@llm_command
@making_options
@titling_options
@options_from(Topic, "topic")
def synth(
    out_path: Out, examples: Examples = None, *, topic: Topic, titling: Titling, making: Making, llm_args: LLMArgs
) -> None:
    """Synthetic questions for a category and tags: titles, de-duplicated, then bodies and resolution dates."""
    shots = questions_of(examples) if examples else []
    _make(synthetic(llm_args.model, topic, shots, making, titling), out_path, making, llm_args, topic.metadata)


@app.command("related")
@handle_errors(after=SAVED)
@llm_command
@making_options
@titling_options
@options_from(related_to, "call", build=dict)
def related(
    questions: Annotated[Path, typer.Option("--questions", "-q", help="JSONL holding the source question.")],
    out_path: Out,
    *,
    call: dict[str, Any],
    titling: Titling,
    making: Making,
    llm_args: LLMArgs,
) -> None:
    """Questions related to one source question (appendix J); then `cc generate --around ID`."""
    titles = related_to(
        llm_args.model, questions_of(questions), making=making, titling=titling, where=str(questions), **call
    )
    _make(titles, out_path, making, llm_args, {"source_id": call["source_id"]})


@app.command("fill")
@handle_errors(after=SAVED)
@llm_command
@making_options
@options_from(given, "titles", flags={"path": "--titles"})
def fill(out_path: Out, *, titles: Titles, making: Making, llm_args: LLMArgs) -> None:
    """Bodies (resolution criteria) and resolution dates for questions given as titles only."""
    _make(titles, out_path, making, llm_args)


@app.command("verify")
@handle_errors(after=SAVED)
@llm_command
@options_from(verify_questions, "call", build=dict)
def verify_cmd(
    questions: Annotated[Path, typer.Option("--questions", "-q", help="Questions JSONL to check.")],
    out_path: Out,
    *,
    call: dict[str, Any],
    llm_args: LLMArgs,
) -> None:
    """Keep questions that are clear, coherent, precisely resolvable and about real events (score >= threshold)."""
    pool = questions_of(questions)
    say(llm_args.run(lambda llm: verify_questions(pool, out_path, llm, llm_args.model, **call)).lines(), out)


@app.command("scrape")
@handle_errors(
    after=lambda exc, _: (
        "the questions written stay; --resume carries on" if isinstance(exc, KeyboardInterrupt | OSError) else None
    )
)
@options_from(ScrapePoliteness, "http")
@options_from(scrape_request, "call", flags={"n": "-n"}, build=dict)
@options_from(ScrapeFilters, "filters")
def scrape_cmd(
    source: Annotated[str, typer.Argument(help="metaculus, manifold or polymarket.")],
    out_path: Out,
    *,
    filters: ScrapeFilters,
    http: ScrapePoliteness,
    call: dict[str, Any],
) -> None:
    """Questions (binary, multiple-choice, numeric, date) from a forecasting platform, appended to --out
    (de-duplicated by source id)."""
    from ..sources.request import progress_info
    from .progress import Progress

    job = scrape_request(source, out_path, filters, http, **call)
    with Progress(transient=True) as progress:
        task = progress.task(f"scraping {source}", total=call["n"])
        report = job(lambda report: task.update(completed=report.written, info=progress_info(report)))
    say(report.lines(), out)


@app.command("news")
@handle_errors(after=SAVED)
@llm_command
@options_from(questions_from_news, "settings", build=dict)
@options_from(NewsSources, "sources", flags={"feeds": "--feed", "first": "--from", "last": "--to"})
def news_cmd(out_path: Out, *, sources: NewsSources, settings: dict[str, Any], llm_args: LLMArgs) -> None:
    """Forecasting questions about what happens after news articles (paper appendix K), verified."""
    from ..questions.making import news_articles

    kept, said = news_articles(sources)
    say(said)
    report = llm_args.run(lambda llm: questions_from_news(kept, out_path, llm, llm_args.model, **settings))
    say(report.lines(), out)


@app.command("resolve")
@handle_errors(after=SAVED)
@llm_command
@options_from(resolve_questions, "call", build=dict)
def resolve_cmd(
    questions: Annotated[Path, typer.Argument(help="Questions JSONL.")],
    out_path: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help=f"Where to write (default: {resolved_file(Path('<name>.jsonl')).name}).",
            callback=_file_out,
        ),
    ] = None,
    as_of: Annotated[str | None, typer.Option(help="Resolve questions due by this day (default: today).")] = None,
    *,
    call: dict[str, Any],
    llm_args: LLMArgs,
) -> None:
    """Resolve unresolved questions past their resolution date with a model (yes/no/unknown, recorded in metadata)."""
    from ..jsonl import write_jsonl

    pool = questions_of(questions)
    as_of_day = day(as_of, "--as-of") or date.today()
    target = out_path or resolved_file(questions)
    resolved, report = llm_args.run(lambda llm: resolve_questions(pool, llm, llm_args.model, as_of=as_of_day, **call))
    write_jsonl(target, resolved)
    say(report.lines(len(resolved), target), out)
