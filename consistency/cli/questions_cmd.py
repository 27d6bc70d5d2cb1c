"""``cc questions``: base questions from a topic, around a source question, from bare titles, from platforms
and news; their verification and resolution."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated

import typer

from ..questions import verify_questions
from ..questions.making import Making, NewsSources, Titling, complete, day, given, synthetic, window
from ..questions.making import related as related_to
from ..store.layout import resolved_file
from .bounds import positive
from .console import err, out, questions_of, say
from .declared import shared_options
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
Created = Annotated[str | None, typer.Option("--created", help="Creation date of the questions (default: today).")]
ResolveBy = Annotated[str, typer.Option("--resolve-by", help="Latest resolution date (YYYY-MM-DD).")]
Count = Annotated[int, typer.Option("-n", min=1, help="How many questions to make.")]
Verify = Annotated[bool, typer.Option("--verify/--no-verify", help="Verify each new question with the model.")]
Threshold = Annotated[int, typer.Option(min=0, max=10, help="Verification score (0-10) a question needs to be kept.")]
Examples = Annotated[Path | None, typer.Option(help="Questions JSONL whose titles serve as style examples.")]
Embeddings = Annotated[str, typer.Option(help="Title de-duplication: auto, lexical, minilm or a model spec.")]
Dedupe = Annotated[
    float, typer.Option(min=0, max=1, help="Titles at least this similar (cosine) to a kept one are dropped.")
]

making_options = shared_options(
    {"created": (Created, None), "resolve_by": (ResolveBy, "2028-01-01"), "verify": (Verify, True),
     "threshold": (Threshold, 6)},
    "making",
    lambda v: Making(window(v["created"], v["resolve_by"]), v["verify"], v["threshold"]),
)  # fmt: skip
titling_options = shared_options(
    {"n": (Count, 10), "embeddings": (Embeddings, "auto"), "dedupe": (Dedupe, 0.9)}, "titling", lambda v: Titling(**v)
)


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
    shots = questions_of(examples) if examples else []
    tag_list = [t.strip() for t in tags.split(",") if t.strip()]
    titles = synthetic(llm_args.model, category, tag_list, shots, making, titling)
    _make(titles, out_path, making, llm_args, {"category": category, "tags": tag_list})


@app.command("related")
@handle_errors(after=SAVED)
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
    titles = related_to(llm_args.model, questions_of(questions), source_id, making, titling, str(questions))
    _make(titles, out_path, making, llm_args, {"source_id": source_id})


@app.command("fill")
@handle_errors(after=SAVED)
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
    _make(given(titles), out_path, making, llm_args)


@app.command("verify")
@handle_errors(after=SAVED)
@llm_command
def verify_cmd(
    questions: Annotated[Path, typer.Option("--questions", "-q", help="Questions JSONL to check.")],
    out_path: Out,
    threshold: Threshold = 6,
    *,
    llm_args: LLMArgs,
) -> None:
    """Keep questions that are clear, coherent, precisely resolvable and about real events (score >= threshold)."""
    pool = questions_of(questions)
    say(llm_args.run(lambda llm: verify_questions(pool, out_path, llm, llm_args.model, threshold)).lines(), out)


@app.command("scrape")
@handle_errors(
    after=lambda exc, _: (
        "the questions written stay; --resume carries on" if isinstance(exc, KeyboardInterrupt | OSError) else None
    )
)
def scrape_cmd(
    source: Annotated[str, typer.Argument(help="metaculus, manifold or polymarket.")],
    out_path: Out,
    n: Annotated[
        int | None, typer.Option("-n", min=1, help="Stop after this many new questions (default: all).")
    ] = None,
    status: Annotated[str, typer.Option(help="resolved, open or all.")] = "resolved",
    resolved_after: Annotated[str | None, typer.Option(help="Earliest resolution date kept (YYYY-MM-DD).")] = None,
    resolved_before: Annotated[str | None, typer.Option(help="Latest resolution date kept (YYYY-MM-DD).")] = None,
    created_after: Annotated[str | None, typer.Option(help="Earliest creation date kept (YYYY-MM-DD).")] = None,
    min_forecasters: Annotated[int | None, typer.Option(min=0, help="Metaculus: fewest forecasters kept.")] = None,
    min_volume: Annotated[
        float | None, typer.Option(min=0, help="Manifold/Polymarket: least traded volume kept.")
    ] = None,
    min_traders: Annotated[int | None, typer.Option(min=0, help="Manifold: fewest distinct traders kept.")] = None,
    search: Annotated[str | None, typer.Option(help="Only questions matching this text.")] = None,
    tournament: Annotated[
        str | None,
        typer.Option(help="Metaculus: only this tournament's questions (its id or slug, as in its page's URL)."),
    ] = None,
    types: Annotated[
        str,
        typer.Option(help="Question types kept, comma-separated: binary, multiple_choice, numeric, date (or all)."),
    ] = "all",
    min_days: Annotated[
        float, typer.Option(min=0, help="Drop questions resolving sooner than this after creation.")
    ] = 3.0,
    market_lead_days: Annotated[
        float,
        typer.Option(
            min=0,
            help="Closed questions: the crowd forecast kept (market_prob, crowd_forecast) is the one this many days "
            "before closing (0: none).",
        ),
    ] = 7.0,
    resume: Annotated[bool, typer.Option(help="Carry on from where the last run on --out stopped.")] = False,
    base_url: Annotated[str | None, typer.Option(help="API root (a mirror, or a local fixture server).")] = None,
    rpm: Annotated[
        float | None, typer.Option(min=0, help="Requests a minute (default: the source's polite rate; 0: none).")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Requests in flight at once.")] = 4,
    timeout: Annotated[
        float, typer.Option(min=0, callback=positive, help="Seconds per request before it is retried.")
    ] = 30.0,
    max_attempts: Annotated[int, typer.Option(min=1, help="Attempts per page on 429/5xx/timeouts.")] = 6,
    cache_dir: Annotated[Path | None, typer.Option(help="Raw page cache (default: <cache>/pages).")] = None,
    offline: Annotated[bool, typer.Option(help="Use cached pages only (re-parse without the network).")] = False,
    refresh: Annotated[bool, typer.Option(help="Fetch pages again even when cached.")] = False,
) -> None:
    """Questions (binary, multiple-choice, numeric, date) from a forecasting platform, appended to --out
    (de-duplicated by source id)."""
    from ..sources.request import scrape_request
    from .progress import Progress

    dates = {"resolved_after": resolved_after, "resolved_before": resolved_before, "created_after": created_after}
    job = scrape_request(
        source, out_path, n=n, types=types, status=status, dates=dates,
        filters={"min_forecasters": min_forecasters, "min_volume": min_volume, "min_traders": min_traders,
                 "search": search, "tournament": tournament, "min_days": min_days,
                 "market_lead_days": market_lead_days},
        http={"rpm": rpm, "concurrency": concurrency, "timeout": timeout, "max_attempts": max_attempts,
              "offline": offline, "refresh": refresh},
        base_url=base_url, cache_dir=cache_dir, resume=resume,
    )  # fmt: skip
    with Progress(transient=True) as progress:
        task = progress.task(f"scraping {source}", total=n)

        def on_page(report) -> None:
            skipped = sum(report.skipped.values())
            info = f"{report.pages} pages, {skipped} skipped, {report.already} already there"
            task.update(completed=report.written, info=info)

        report = job(on_page)
    say(report.lines(), out)


@app.command("news")
@handle_errors(after=SAVED)
@llm_command
def news_cmd(
    out_path: Out,
    feed: Annotated[list[str] | None, typer.Option("--feed", help="RSS/Atom feed URL (repeatable).")] = None,
    articles: Annotated[Path | None, typer.Option(help="JSONL of articles (title, url, published_at, ...).")] = None,
    newsapi: Annotated[str | None, typer.Option(help="NewsAPI query (key in NEWSAPI_KEY), one request a day.")] = None,
    days_from: Annotated[str | None, typer.Option("--from", help="First day for --newsapi (YYYY-MM-DD).")] = None,
    days_to: Annotated[str | None, typer.Option("--to", help="Last day for --newsapi (default: --from).")] = None,
    domains: Annotated[str | None, typer.Option(help="NewsAPI: comma-separated domains, e.g. apnews.com.")] = None,
    newsapi_url: Annotated[str, typer.Option(help="NewsAPI-compatible API root.")] = "https://newsapi.org",
    horizon_days: Annotated[
        int, typer.Option(min=1, help="Questions resolve within this many days of the article.")
    ] = 90,
    per_article: Annotated[int, typer.Option(min=1, help="Most questions proposed per article.")] = 3,
    span: Annotated[int, typer.Option(min=0, help="Reference-class variants per question (0: none).")] = 0,
    rephrase: Annotated[
        bool, typer.Option(help="Reword each question to stand alone, then reject it if the article settles it.")
    ] = True,
    dedupe: Annotated[
        float, typer.Option(min=0, max=1, help="Entity overlap (Jaccard) at which an older article is dropped.")
    ] = 0.25,
    threshold: Threshold = 6,
    verifier_model: Annotated[
        str | None, typer.Option(help="Model that verifies the questions (default: --model).")
    ] = None,
    *,
    llm_args: LLMArgs,
) -> None:
    """Forecasting questions about what happens after news articles (paper appendix K), verified."""
    from ..questions.making import news_articles
    from ..questions.news import questions_from_news

    first = day(days_from, "--from")
    sources = NewsSources(feed or (), articles, newsapi, first, day(days_to, "--to") or first, domains, newsapi_url)
    kept, said = news_articles(sources, dedupe)
    say(said)
    settings = {"horizon_days": horizon_days, "per_article": per_article, "threshold": threshold, "span": span,
                "rephrase": rephrase, "verifier_model": verifier_model}  # fmt: skip
    report = llm_args.run(lambda llm: questions_from_news(kept, out_path, llm, llm_args.model, **settings))
    say(report.lines(), out)


@app.command("resolve")
@handle_errors(after=SAVED)
@llm_command
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
    votes: Annotated[int, typer.Option(min=1, help="Model answers per question; the majority of yes/no wins.")] = 1,
    *,
    llm_args: LLMArgs,
) -> None:
    """Resolve unresolved questions past their resolution date with a model (yes/no/unknown, recorded in metadata)."""
    from ..jsonl import write_jsonl
    from ..sources.resolve import resolve_questions

    pool = questions_of(questions)
    as_of_day = day(as_of, "--as-of") or date.today()
    target = out_path or resolved_file(questions)
    resolved, report = llm_args.run(
        lambda llm: resolve_questions(pool, llm, llm_args.model, as_of=as_of_day, votes=votes)
    )
    write_jsonl(target, resolved)
    say(report.lines(len(resolved), target), out)
