"""Making base questions end to end: titles (from a topic, around a source question, or given), then bodies
and resolution dates, then verification; and the articles that news questions are made from.

What ``cc questions synth|related|fill|news`` run, as one call each, so the Python API gets the same; the
documented fields of :class:`Making`, :class:`Titling` and :class:`NewsSources` are those commands' options.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Annotated, Any

from annotated_doc import Doc
from annotated_types import Ge, Le

from ..embeddings import make_embedder
from ..errors import InputError
from ..llm import LLM
from ..models import ForecastingQuestion
from .pipeline import QuestionReport, Threshold, Window, build_questions
from .titles import related_titles, synthetic_titles

Verify = Annotated[bool, Doc("Verify each new question with the model.")]


@dataclass(frozen=True)
class Making:
    """How new questions are made: their dates, and whether a model verifies each (with the threshold).
    :meth:`dated` takes the dates as the command line gives them; its parameters are ``cc questions
    synth|related|fill``' options."""

    window: Window
    verify: Verify = True
    threshold: Threshold = 6

    @classmethod
    def dated(
        cls,
        created: Annotated[str | None, Doc("Creation date of the questions (default: today).")] = None,
        resolve_by: Annotated[str, Doc("Latest resolution date (YYYY-MM-DD).")] = "2028-01-01",
        verify: Verify = True,
        threshold: Threshold = 6,
    ) -> Making:
        """The dates as ``YYYY-MM-DD`` text, checked by :func:`window`; the other fields as they are."""
        return cls(window(created, resolve_by), verify, threshold)


@dataclass(frozen=True)
class Titling:
    """How many titles are wanted, and how near-duplicates are told apart and dropped (``cc questions
    synth|related``' options)."""

    n: Annotated[int, Ge(1), Doc("How many questions to make.")] = 10
    embeddings: Annotated[str, Doc("Title de-duplication: auto, lexical, minilm or a model spec.")] = "auto"
    dedupe: Annotated[float, Ge(0), Le(1), Doc("Titles at least this similar (cosine) to a kept one are dropped.")] = (
        0.9
    )


def window(created: str | date | None, resolve_by: str | date) -> Window:
    """Dates as given (``YYYY-MM-DD``; no ``created``: today), checked: resolution after creation."""
    made = day(created, "--created") or date.today()
    due = day(resolve_by, "--resolve-by")
    if due is None or due <= made:
        raise InputError("--resolve-by must be after --created")
    return Window(made, due)


def day(value: str | date | None, name: str) -> date | None:
    """A date option (``None`` stays ``None``); one sentence naming the option when it is not a date."""
    if value is None or isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise InputError(f"{name} must be a date YYYY-MM-DD: {exc}") from None


Titles = Callable[[LLM], Awaitable[list[str]]]


async def complete(
    titles_of: Titles,
    out: str | Path,
    llm: LLM,
    model: str,
    making: Making,
    metadata: dict[str, Any] | None = None,
    on_titles: Callable[[int], None] | None = None,
) -> QuestionReport:
    """Titles from ``titles_of``, then a body and resolution date for each (and, with ``making.verify``, the
    same model's verification), appended to ``out``; ``on_titles`` hears how many distinct titles there are."""
    titles = await titles_of(llm)
    if on_titles is not None:
        on_titles(len(titles))
    judge = model if making.verify else None
    return await build_questions(titles, out, llm, model, making.window, verifier_model=judge,
                                 threshold=making.threshold, metadata=metadata)  # fmt: skip


@dataclass(frozen=True)
class Topic:
    """What synthetic questions are about (``cc questions synth``'s options)."""

    category: Annotated[str, Doc("Topic of the questions, e.g. Economics.")]
    tags: Annotated[str, Doc("Comma-separated tags to diversify them (Brazil,NBA,...).")]

    @property
    def tag_list(self) -> list[str]:
        return [t.strip() for t in self.tags.split(",") if t.strip()]

    @property
    def metadata(self) -> dict[str, Any]:
        """What each question made on it records of it."""
        return {"category": self.category, "tags": self.tag_list}


def synthetic(
    model: str, topic: Topic, examples: Sequence[ForecastingQuestion], making: Making, titling: Titling
) -> Titles:
    """Titles for a category and tags (appendix L), de-duplicated."""

    async def titles_of(llm: LLM) -> list[str]:
        return await synthetic_titles(llm, model, category=topic.category, tags=topic.tag_list, examples=examples,
                                      created=str(making.window.created), resolve_by=str(making.window.resolve_by),
                                      n=titling.n, embedder=make_embedder(titling.embeddings, llm),
                                      threshold=titling.dedupe)  # fmt: skip

    return titles_of


def related(
    model: str,
    pool: Sequence[ForecastingQuestion],
    source_id: Annotated[str, Doc("Id of the source question.")],
    making: Making,
    titling: Titling,
    where: str = "",
) -> Titles:
    """Titles of questions related to the question ``source_id`` of ``pool`` (appendix J; ``where``: its file)."""
    source = next((q for q in pool if q.id == source_id), None)
    if source is None:
        raise InputError(f"no question with id {source_id} in {where or 'the questions given'}")

    async def titles_of(llm: LLM) -> list[str]:
        return await related_titles(llm, model, source, examples=pool, resolve_by=str(making.window.resolve_by),
                                    n=titling.n, embedder=make_embedder(titling.embeddings, llm),
                                    threshold=titling.dedupe)  # fmt: skip

    return titles_of


def given(path: Annotated[Path, Doc("Text file, one question title per line.")]) -> Titles:
    """The titles of a text file, one per line."""
    lines = [t.strip() for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]

    async def titles_of(llm: LLM) -> list[str]:
        return lines

    return titles_of


@dataclass(frozen=True)
class NewsSources:
    """Where articles come from (RSS/Atom feeds, a JSONL file, NewsAPI: a query, days, domains), and how alike
    two may be before the older is dropped. The fields are ``cc questions news``' options of the same names
    (``feeds``: ``--feed``, ``first``/``last``: ``--from``/``--to``)."""

    feeds: Annotated[list[str] | None, Doc("RSS/Atom feed URL (repeatable).")] = None
    articles: Annotated[Path | None, Doc("JSONL of articles (title, url, published_at, ...).")] = None
    newsapi: Annotated[str | None, Doc("NewsAPI query (key in NEWSAPI_KEY), one request a day.")] = None
    first: Annotated[str | None, Doc("First day for --newsapi (YYYY-MM-DD).")] = None
    last: Annotated[str | None, Doc("Last day for --newsapi (default: --from).")] = None
    domains: Annotated[str | None, Doc("NewsAPI: comma-separated domains, e.g. apnews.com.")] = None
    newsapi_url: Annotated[str, Doc("NewsAPI-compatible API root.")] = "https://newsapi.org"
    dedupe: Annotated[float, Ge(0), Le(1), Doc("Entity overlap (Jaccard) at which an older article is dropped.")] = 0.25

    def days(self) -> list[date] | None:
        """The days NewsAPI is asked about, ``first`` to ``last`` (one day: ``first``; None: no ``first``); a
        bad date is an :class:`InputError` naming its option."""
        first, last = day(self.first, "--from"), day(self.last, "--to")
        if first is None:
            return None
        return [first + timedelta(days=i) for i in range(((last or first) - first).days + 1)]


async def gather_articles(sources: NewsSources) -> tuple[list[Any], list[str]]:
    """The articles of every source, and one warning per feed or day that could not be read. A bad line in
    the articles file, or NewsAPI without a day or a key, is an :class:`InputError` before any request."""
    from ..llm.secrets import optional_key
    from ..paths import cache_dir
    from ..sources.http import HttpSettings, PageCache, WebClient
    from ..sources.news import NEWSAPI_VARIABLE, fetch_feeds, fetch_newsapi, load_articles, newsapi_fatal

    days = sources.days()
    if not (sources.feeds or sources.articles or sources.newsapi):
        raise InputError("give --feed URL, --articles FILE or --newsapi QUERY")
    pool, problems = [], []
    if sources.articles:
        loaded, errors = load_articles(sources.articles)
        if errors:
            raise InputError("; ".join(str(e) for e in errors[:20]))
        pool += loaded
    key = optional_key(NEWSAPI_VARIABLE)
    if sources.newsapi and days is None:
        raise InputError("--newsapi needs --from (and optionally --to)")
    if sources.newsapi and not key:
        raise InputError(f"{NEWSAPI_VARIABLE} is not set: export it or put it in a .env file to use --newsapi")
    cache = PageCache(cache_dir() / "pages" / "news")
    if sources.feeds:
        async with WebClient("feeds", HttpSettings(requests_per_minute=60), cache) as web:
            got, bad = await fetch_feeds(list(sources.feeds), web)
            pool, problems = pool + got, problems + bad
    if sources.newsapi and days is not None:
        settings = HttpSettings(requests_per_minute=30)
        async with WebClient("newsapi", settings, cache, {"X-Api-Key": key or ""}, newsapi_fatal) as web:
            got, bad = await fetch_newsapi(web, sources.newsapi_url, sources.newsapi, days, domains=sources.domains)
            pool, problems = pool + got, problems + bad
    return pool, problems


def news_articles(sources: NewsSources) -> tuple[list[Any], list[str]]:
    """The articles to read (near-duplicates by entity overlap ``sources.dedupe`` dropped), and what to tell the
    user first: a warning per source that could not be read, then how many articles were kept."""
    import asyncio

    from ..sources.news import dedupe_articles

    pool, problems = asyncio.run(gather_articles(sources))
    kept, dropped = dedupe_articles(pool, sources.dedupe)
    said = f"{len(pool)} article(s), {dropped} near-duplicate(s) dropped, {len(kept)} to read"
    return kept, [f"warning {problem}" for problem in problems] + [said]
